/**
 * The interlink provider's wrapper of the main container for the tunnel agent, run by sh as the
 * plugin's container would: the agent starts first, the container's Service env vars take its
 * addresses, the original command runs with its arguments intact and never sees the agent's
 * credential; a pod without an attachment, or whose main container has no command, is unchanged.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { withTunnelAgent } from "../../../providers/interlink/request/tunnel_agent.ts";

/** An "agent" that writes the env file it is given and stays up until killed. */
const FAKE_AGENT = [
  "sh",
  "-c",
  'for a; do case "$a" in --env-file=*) printf "WEB_SERVICE_HOST=127.90.0.1\\nOTHER_SERVICE_HOST=127.90.0.2\\n" > "${a#--env-file=}";; esac; done; exec sleep 30',
  "fake-agent",
];

const pod = (command?: string[]): Pod => ({
  metadata: { namespace: "default", name: "job", uid: crypto.randomUUID() },
  spec: {
    containers: [{
      name: "main",
      image: "busybox",
      ...(command ? { command } : {}),
      args: ["a b", "it's"],
      env: [{ name: "WEB_SERVICE_HOST", value: "10.96.0.5" }],
    }],
  },
});

Deno.test("the wrapped main container starts the agent, takes its Service addresses and runs its own command", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const wrapped = withTunnelAgent(
      pod([
        "sh",
        "-c",
        'printf "%s|" "$WEB_SERVICE_HOST" "${OTHER_SERVICE_HOST-unset}" "${VKUBELET_AGENT_CREDENTIAL-none}" "$@"',
        "me",
      ]),
      {
        podIP: "198.19.1.2",
        podIPs: ["198.19.1.2"],
        agentCommand: FAKE_AGENT,
        agentCredential: "vkt1.x.secret",
      },
    );
    const c = wrapped.spec!.containers[0];
    assert.equal(c.args?.length, 0);
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? ""]));
    const out = await new Deno.Command(c.command![0], {
      args: c.command!.slice(1),
      env: { ...env, TMPDIR: tmp, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
      clearEnv: true,
      stdout: "piped",
    }).output();
    assert.equal(
      new TextDecoder().decode(out.stdout),
      "127.90.0.1|unset|none|a b|it's|",
      "the env var the pod has takes the agent's address, one it has not stays unset",
    );
    assert.equal(out.code, 0);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("without an attachment, or a command to wrap, the pod goes to the plugin as it is", () => {
  const plain = pod(["sh"]);
  assert.equal(withTunnelAgent(plain, undefined), plain);
  const entrypoint = pod();
  const network = { podIP: "1", podIPs: ["1"], agentCommand: ["agent"], agentCredential: "c" };
  assert.equal(withTunnelAgent(entrypoint, network), entrypoint);
});
