/**
 * The network boundary of a process pod with its own namespace (security issue #61's attacker
 * tests): a pod reaches neither the loopback services of the host it runs on (vkubelet's own
 * namespace, where an admin's local-only daemons listen on 127.0.0.1) nor a port another pod
 * bound to its own loopback; 127.0.0.1 in a pod is that pod's own `lo`. Before pods had
 * namespaces (no `network` section then), both attacks worked.
 * @module
 */
import assert from "node:assert/strict";
import type { Container } from "kubernetes-types/core/v1.d.ts";
import { cleanup, collector, makePod, startProvider, waitFor } from "./_helpers.ts";
import { networkLab, networkSkipReason } from "./_network_lab.ts";

const skip = networkSkipReason();
if (skip) console.warn(`network isolation tests skipped: ${skip}`);

/** A server of this process on the host's 127.0.0.1 (a local-only daemon), counting clients. */
function hostLoopbackServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      accepted++;
      await conn.write(new TextEncoder().encode("host secret")).catch(() => {});
      conn.close();
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    accepted: () => accepted,
    async close() {
      listener.close();
      await serving;
    },
  };
}

/** A container whose server answers "NAME secret" on 127.0.0.1:PORT only. */
function loopbackServer(name: string, port: number): Container {
  const script = "import socketserver as s\n" +
    "class H(s.BaseRequestHandler):\n" +
    `    def handle(self): self.request.sendall(b'${name} secret')\n` +
    "s.TCPServer.allow_reuse_address = True\n" +
    `s.TCPServer(('127.0.0.1', ${port}), H).serve_forever()\n`;
  return { name: "c", image: "x", command: ["/usr/bin/python3", "-c", script] };
}

async function exec(
  t: Awaited<ReturnType<typeof startProvider>>,
  pod: string,
  command: string[],
): Promise<{ code: number; out: string }> {
  const out = collector(), err = collector();
  const code = await t.provider.runInContainer({ namespace: "default", pod, container: "c" }, {
    command,
    io: { stdout: out.writable, stderr: err.writable, tty: false },
  });
  return { code, out: out.text() };
}

/** The provider with the lab's pod network; without one where the provider has no such option. */
async function providerWithNetwork(network: Record<string, unknown>) {
  try {
    return await startProvider({ config: { network } });
  } catch (err) {
    if (!/network/.test(String(err))) throw err;
    return await startProvider();
  }
}

/** A victim pod serving on its own loopback, an attacker pod, and the host's loopback server. */
async function withPods(
  fn: (ctx: {
    t: Awaited<ReturnType<typeof startProvider>>;
    attack: (url: string) => Promise<string>;
    victimIp: string;
    hostPort: number;
    hostAccepted: () => number;
  }) => Promise<void>,
) {
  const lab = await networkLab();
  const t = await providerWithNetwork(lab.network);
  const host = hostLoopbackServer();
  const victim = makePod([loopbackServer("victim", PORT)]);
  const attacker = makePod([{ name: "c", image: "x", command: ["sleep", "60"] }]);
  const [v, a] = [victim.metadata!.name!, attacker.metadata!.name!];
  const curl = (pod: string, url: string) =>
    exec(t, pod, ["curl", "-s", "--max-time", "2", url]).then((r) => r.out);
  try {
    await t.provider.createPod(victim, {});
    await t.provider.createPod(attacker, {});
    await waitFor("attacker running", () => t.provider.runnerOf("default", a)?.live("c"));
    // Control: the victim reaches its own loopback server, so an attack can fail only because
    // of the boundary.
    await waitFor(
      "victim serves its own lo",
      async () => (await curl(v, `telnet://127.0.0.1:${PORT}`)).includes("victim secret"),
    );
    const victimIp = (await t.provider.getPodStatus("default", v, {}))?.podIP ?? "";
    await fn({
      t,
      attack: (url) => curl(a, url),
      victimIp,
      hostPort: host.port,
      hostAccepted: host.accepted,
    });
  } finally {
    await host.close();
    await cleanup(t.provider, victim);
    await cleanup(t.provider, attacker);
    await t.close();
    await lab.close();
  }
}

const PORT = 19090;
const options = { ignore: skip !== undefined, sanitizeResources: false, sanitizeOps: false };

Deno.test({
  name: "a pod cannot reach a port another pod bound to its own loopback",
  ...options,
  fn: () =>
    withPods(async ({ attack, victimIp }) => {
      const viaLo = await attack(`telnet://127.0.0.1:${PORT}`);
      assert.ok(!viaLo.includes("victim secret"), "the attacker read the victim's loopback port");
      const viaIp = await attack(`telnet://${victimIp}:${PORT}`);
      assert.ok(!viaIp.includes("victim secret"), "the attacker reached the victim's lo by IP");
    }),
});

Deno.test({
  name: "a pod cannot reach the host's loopback services: 127.0.0.1 is its own lo",
  ...options,
  fn: () =>
    withPods(async ({ attack, hostPort, hostAccepted }) => {
      const toHost = await attack(`telnet://127.0.0.1:${hostPort}`);
      assert.ok(!toHost.includes("host secret"), "the attacker read the host's loopback service");
      assert.equal(hostAccepted(), 0, "the host's loopback service saw a connection from the pod");
    }),
});
