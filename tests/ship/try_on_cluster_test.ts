/**
 * The operator's path of the README ("Using it against a cluster you already have"): the two
 * documented commands, `scripts/try_on_cluster.sh up` and `down`, run as written against the
 * local control plane with its admin kubeconfig, on loopback (NODE_IP and PORT set, as the README
 * says to where the API server reaches this host another way).
 */
import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { freePort } from "../../tools/cluster/ports.ts";

const root = new URL("../../", import.meta.url).pathname;

Deno.test({
  name: "try_on_cluster.sh joins a node as itself, serves logs and exec, and removes it all",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const c = await useCluster();
    const node = `vk-try-${crypto.randomUUID().slice(0, 6)}`;
    const work = await Deno.makeTempDir({ prefix: "vk-try-" });
    // The operator's kubectl: the local control plane's, by that name on PATH.
    await Deno.writeTextFile(`${work}/kubectl`, `#!/bin/sh\nexec '${c.binary}' kubectl "$@"\n`);
    await Deno.chmod(`${work}/kubectl`, 0o755);
    const env = {
      KUBECONFIG: c.kubeconfigPath,
      PATH: `${work}:${Deno.env.get("PATH")}`,
      DENO: Deno.execPath(),
      NODE: node,
      NODE_IP: "127.0.0.1",
      PORT: String(freePort()),
      DIR: `${work}/state`,
    };
    const run = async (step: "up" | "down") => {
      const out = await new Deno.Command("bash", {
        args: ["scripts/try_on_cluster.sh", step],
        cwd: root,
        env,
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(300_000),
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      return { code: out.code, text };
    };
    try {
      const up = await run("up");
      const log = await Deno.readTextFile(`${work}/state/vkubelet.log`).catch(() => "(no log)");
      assert.equal(up.code, 0, `${up.text}\n--- vkubelet.log ---\n${log}`);
      assert.match(up.text, new RegExp(`certificatesigningrequest.* approved`));
      assert.match(up.text, new RegExp(`exec works on ${node}`));
      // The node runs as itself, with the certificate its bootstrap CSR got, not as the admin.
      const client = await Deno.readTextFile(`${work}/state/${node}-client-current.pem`);
      assert.match(client, /BEGIN CERTIFICATE/);
      const whoami = await new Deno.Command(c.binary, {
        args: ["kubectl", `--kubeconfig=${work}/state/${node}.kubeconfig`, "auth", "whoami"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.match(new TextDecoder().decode(whoami.stdout), new RegExp(`system:node:${node}`));
      const ready = await c.kubectl([
        "get",
        "node",
        node,
        "-o",
        "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
      ]);
      assert.equal(ready.stdout.trim(), "True");

      const down = await run("down");
      assert.equal(down.code, 0, down.text);
      const gone = await c.kubectl(["get", "node", node]);
      assert.notEqual(gone.code, 0, "the node is deleted");
      const csrs = await c.kubectl(["get", "csr", "-o", "name"]);
      assert.ok(!csrs.stdout.includes(`csr-${node}-`), `its CSRs are deleted:\n${csrs.stdout}`);
      assert.equal(await Deno.stat(`${work}/state`).catch(() => undefined), undefined);
    } finally {
      await run("down").catch(() => {});
      await Deno.remove(work, { recursive: true }).catch(() => {});
    }
  },
});
