/**
 * A remote pod on the pod network through the tunnel, with real network namespaces: a test host
 * (a namespace the test makes, 198.19.x.0/24 from 198.18.0.0/15) whose CNI bridge gives the
 * remote pod its own namespace and IP; vkubelet's kubelet API with the tunnel host on
 * 127.0.0.1; the agent in process beside a "pod" HTTP server on 127.0.0.1, as it would be in a
 * SLURM job. A client in the test host reaches the pod at its pod IP; the agent reaches a
 * ClusterIP Service (an nft DNAT in the test host standing in for kube-proxy's rule) by the
 * name in its hosts fragment, and the backend sees the pod IP as the source. With the agent
 * stopped, both fail. Root only.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runAgent } from "../../app/agent/mod.ts";
import { loadNetworkConfig } from "../../providers/process/network/cni.ts";
import { PodNetworks } from "../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../providers/process/network/tunnel_network.ts";
import { ListedServices, remotePod, startTunnelServer } from "../../tools/tunnel/server.ts";
import { log } from "../../tools/harness/kubelet_api_fakes.ts";
import { networkLab, networkSkipReason, tryRun } from "../providers/process/_network_lab.ts";
import { serviceBackend } from "./_service_backend.ts";

const skip = networkSkipReason();
if (skip) console.warn(`tunnel netns test skipped: ${skip}`);

const CLUSTER_IP = "198.18.96.77";

async function get(url: string): Promise<string> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return (await response.text()).trim();
}

Deno.test({
  name:
    "a remote pod is reached at its pod IP and reaches a ClusterIP Service by name, only through the tunnel",
  ignore: skip !== undefined,
  sanitizeResources: false,
  async fn() {
    const lab = await networkLab();
    const stateDir = await Deno.makeTempDir({ prefix: "vk-tunnel-state-" });
    const backend = serviceBackend(lab, "0.0.0.0");
    const podListener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const podPort = podListener.addr.port;
    const podServing = (async () => {
      for await (const conn of podListener) {
        void (async () => {
          const body = "hello from the remote pod";
          await conn.read(new Uint8Array(4096)).catch(() => null);
          await conn.write(new TextEncoder().encode(
            `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
          )).catch(() => {});
          conn.close();
        })();
      }
    })().catch(() => {});
    const pod = remotePod("job", "team", [podPort]);
    const stop = new AbortController();
    let agent: Promise<void> | undefined;
    try {
      await backend.route([{ ip: CLUSTER_IP, port: 80 }], stateDir);
      const list = await loadNetworkConfig(lab.network.cniConfDir);
      const networks = new PodNetworks(
        { ...lab.network, cniBinDir: [lab.network.cniBinDir] },
        list!,
        {
          stateDir,
          log,
          nodeIPs: () => [lab.gateway],
        },
      );
      networks.setPodCIDRs([lab.podCIDR]);
      const services = new ListedServices();
      services.set([{
        namespace: "team",
        name: "web",
        clusterIP: CLUSTER_IP,
        ports: [{ port: 80, protocol: "TCP" }],
      }]);
      await using server = await startTunnelServer(
        new RemotePodNetworks(networks, stateDir),
        services,
      );
      const attached = await server.host.attach(pod);
      assert.ok(attached.podIP.startsWith(lab.podCIDR.slice(0, -5)), attached.podIP);
      const fromHost = (path = "/") =>
        tryRun(
          "ip",
          "netns",
          "exec",
          lab.name,
          "curl",
          "-sS",
          "-m",
          "5",
          `http://${attached.podIP}:${podPort}${path}`,
        );

      // Tunnel off: nothing answers at the pod IP.
      const off = await fromHost();
      assert.notEqual(off.stdout, "hello from the remote pod", "answered with no agent");

      // The backend (python) may still be starting on a loaded machine.
      for (let i = 0; i < 100; i++) {
        const up = await tryRun(
          "ip",
          "netns",
          "exec",
          lab.name,
          "curl",
          "-sS",
          "-m",
          "1",
          `http://${lab.gateway}:8080/`,
        );
        if (up.code === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const hostsFile = join(stateDir, "hosts");
      const ready = Promise.withResolvers<void>();
      agent = runAgent({
        server: new URL(server.url),
        caPem: server.caPem,
        credential: attached.agentCredential,
        hostsFile,
        log: () => {},
        onReady: () => ready.resolve(),
      }, stop.signal);
      await ready.promise;

      const on = await fromHost();
      assert.equal(on.stdout, "hello from the remote pod", on.stderr);

      const hosts = await Deno.readTextFile(hostsFile);
      const line = hosts.split("\n").find((l) => l.includes("web.team.svc.cluster.local"));
      assert.ok(line, hosts);
      const address = line.split(/\s+/)[0];
      assert.equal(await get(`http://${address}:80/`), `backend saw ${attached.podIP}`);

      // Tunnel off again: the agent stops, both directions fail.
      stop.abort();
      await agent;
      agent = undefined;
      const after = await fromHost();
      assert.notEqual(after.stdout, "hello from the remote pod");
      await assert.rejects(get(`http://${address}:80/`));
      await server.host.detach(pod);
    } finally {
      stop.abort();
      await agent;
      podListener.close();
      await podServing;
      await backend.stop();
      await lab.close();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  },
});
