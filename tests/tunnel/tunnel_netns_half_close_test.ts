/**
 * A client that half-closes after its request (as `nc -N`, HTTP/1.0-style senders and many RPC
 * clients do) gets the whole answer from a remote pod, through every piece a connection to a pod
 * IP crosses: the relay listening in the pod's namespace (CNI in a test host, 198.19.x.0/24 as
 * in tunnel_netns_integration_test.ts), vkubelet's Unix socket, the tunnel, the agent, and the
 * "pod" server beside it on 127.0.0.1, which answers only once it has read the request to its
 * end. Root only.
 * @module
 */
import assert from "node:assert/strict";
import { runAgent } from "../../app/agent/mod.ts";
import { loadNetworkConfig } from "../../providers/process/network/cni.ts";
import { PodNetworks } from "../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../providers/process/network/tunnel_network.ts";
import { ListedServices, remotePod, startTunnelServer } from "../../tools/tunnel/server.ts";
import { log } from "../../tools/harness/kubelet_api_fakes.ts";
import { networkLab, networkSkipReason } from "../providers/process/_network_lab.ts";

const skip = networkSkipReason();
if (skip) console.warn(`tunnel half-close netns test skipped: ${skip}`);

/** Sends `request` from the test host, shuts its side, and reads the answer to its end. */
async function halfClosingClient(lab: string, ip: string, port: number, request: string) {
  const client = new Deno.Command("ip", {
    // socat: after its stdin's EOF it shuts the TCP write side and waits up to 5 s for the rest.
    args: ["netns", "exec", lab, "socat", "-t", "5", "STDIO", `TCP4:${ip}:${port}`],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(10_000),
  }).spawn();
  const writer = client.stdin.getWriter();
  await writer.write(new TextEncoder().encode(request));
  await writer.close();
  const out = await client.output();
  return {
    answer: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test({
  name: "a client in the cluster that half-closes after its request gets a remote pod's answer",
  ignore: skip !== undefined,
  sanitizeResources: false,
  async fn() {
    const lab = await networkLab();
    const stateDir = await Deno.makeTempDir({ prefix: "vk-tunnel-half-close-" });
    // The pod answers once the request has ended, as a server reading to EOF does.
    const podListener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const podPort = podListener.addr.port;
    const podServing = (async () => {
      for await (const conn of podListener) {
        void (async () => {
          let got = 0;
          const buffer = new Uint8Array(4096);
          for (let n; (n = await conn.read(buffer)) !== null;) got += n;
          await conn.write(new TextEncoder().encode(`the pod read ${got} bytes`));
          conn.close();
        })().catch(() => {});
      }
    })().catch(() => {});
    const pod = remotePod("job", "team", [podPort]);
    const stop = new AbortController();
    let agent: Promise<void> | undefined;
    try {
      const list = await loadNetworkConfig(lab.network.cniConfDir);
      const networks = new PodNetworks(
        { ...lab.network, cniBinDir: [lab.network.cniBinDir] },
        list!,
        { stateDir, log, nodeIPs: () => [lab.gateway] },
      );
      networks.setPodCIDRs([lab.podCIDR]);
      await using server = await startTunnelServer(
        new RemotePodNetworks(networks, stateDir),
        new ListedServices(),
      );
      const attached = await server.host.attach(pod);
      const ready = Promise.withResolvers<void>();
      agent = runAgent({
        server: new URL(server.url),
        caPem: server.caPem,
        credential: attached.agentCredential,
        hostsFile: `${stateDir}/hosts`,
        log: () => {},
        onReady: () => ready.resolve(),
      }, stop.signal);
      await ready.promise;

      const request = "GET / HTTP/1.0\r\n\r\n";
      const { answer, stderr } = await halfClosingClient(
        lab.name,
        attached.podIP,
        podPort,
        request,
      );
      assert.equal(answer, `the pod read ${request.length} bytes`, `answer lost: ${stderr}`);
      await server.host.detach(pod);
    } finally {
      stop.abort();
      await agent;
      podListener.close();
      await podServing;
      await lab.close();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  },
});
