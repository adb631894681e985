/**
 * A gateway pod on the pod network with real network namespaces (issue #64 item 4): a test host
 * (a namespace the test makes, 198.19.x.0/24 from 198.18.0.0/15) whose CNI bridge gives the pod
 * its own namespace and IP here; vkubelet's kubelet API with the tunnel host on 127.0.0.1; the
 * gateway agent in process, "the other cluster" on loopback (the pod at 127.0.62.5, the gateway's
 * listeners on 127.0.62.1). A client in the test host reaches the pod at its IP here through the
 * gateway; a call to the gateway's port from the pod's address reaches a ClusterIP Service (an
 * nft DNAT in the test host standing in for kube-proxy's) and the backend sees the pod's IP here
 * as the source. With the gateway stopped, both fail. Root only.
 * @module
 */
import assert from "node:assert/strict";
import { runAgent } from "../../app/agent/mod.ts";
import { freePort } from "../../app/run/parts.ts";
import type { TunnelGateway } from "../../core/tunnel/host.ts";
import { loadNetworkConfig } from "../../providers/process/network/cni.ts";
import { PodNetworks } from "../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../providers/process/network/tunnel_network.ts";
import { eventually } from "../../tools/harness/wait.ts";
import { log } from "../../tools/harness/kubelet_api_fakes.ts";
import {
  ListedServices,
  readAll,
  remotePod,
  sourceEcho,
  startTunnelServer,
} from "../../tools/tunnel/server.ts";
import { networkLab, networkSkipReason, tryRun } from "../providers/process/_network_lab.ts";
import { serviceBackend } from "./_service_backend.ts";

const skip = networkSkipReason();
if (skip) console.warn(`gateway netns test skipped: ${skip}`);

const CLUSTER_IP = "198.18.96.78";
const GATEWAY_ADDRESS = "127.0.62.1";
const POD_ADDRESS = "127.0.62.5";

Deno.test({
  name:
    "a gateway pod is reached at its IP here and calls a ClusterIP Service as that IP, only through the gateway",
  ignore: skip !== undefined,
  sanitizeResources: false,
  async fn() {
    const lab = await networkLab();
    const stateDir = await Deno.makeTempDir({ prefix: "vk-gateway-netns-" });
    const backend = serviceBackend(lab, "0.0.0.0");
    await using pod = sourceEcho(POD_ADDRESS, "pod answered");
    const spec = remotePod("web", "team", [pod.port]);
    const stop = new AbortController();
    let agent: Promise<void> | undefined;
    let gateway: TunnelGateway | undefined;
    try {
      await backend.route([{ ip: CLUSTER_IP, port: 80 }], stateDir);
      const list = await loadNetworkConfig(lab.network.cniConfDir);
      const networks = new PodNetworks(
        { ...lab.network, cniBinDir: [lab.network.cniBinDir] },
        list!,
        { stateDir, log, nodeIPs: () => [lab.gateway] },
      );
      networks.setPodCIDRs([lab.podCIDR]);
      const services = new ListedServices();
      services.set([{
        namespace: "team",
        name: "api",
        clusterIP: CLUSTER_IP,
        ports: [{ port: 80, protocol: "TCP" }],
      }]);
      await using server = await startTunnelServer(
        new RemotePodNetworks(networks, stateDir),
        services,
      );
      gateway = await server.host.gateway();
      const { podIP } = await gateway.attach(spec);
      assert.ok(podIP.startsWith(lab.podCIDR.slice(0, -5)), podIP);
      gateway.setRemoteAddress(spec, POD_ADDRESS);
      const gatewayPort = freePort(GATEWAY_ADDRESS);
      gateway.setServices([{ namespace: "team", name: "api", port: 80, gatewayPort }]);
      const fromHost = () =>
        tryRun(
          "ip",
          "netns",
          "exec",
          lab.name,
          "curl",
          "--http0.9",
          "-sS",
          "-m",
          "5",
          `http://${podIP}:${pod.port}/`,
        );

      // Gateway off: nothing answers at the pod IP.
      assert.doesNotMatch((await fromHost()).stdout, /pod answered/, "answered with no gateway");

      const ready = Promise.withResolvers<void>();
      agent = runAgent({
        server: new URL(server.url),
        caPem: server.caPem,
        credential: gateway.agentCredential,
        gateway: true,
        listenAddress: GATEWAY_ADDRESS,
        log: () => {},
        onReady: () => ready.resolve(),
      }, stop.signal);
      await ready.promise;

      const on = await fromHost();
      assert.match(on.stdout, /^pod answered 127\./, on.stderr);
      const call = () =>
        readAll(GATEWAY_ADDRESS, gatewayPort, POD_ADDRESS, "GET / HTTP/1.0\r\n\r\n");
      const answer = await eventually("the gateway's listener", call, 10_000);
      assert.match(answer, new RegExp(`backend saw ${podIP.replaceAll(".", "\\.")}\\n`));

      // Gateway off again: both directions fail.
      stop.abort();
      await agent;
      agent = undefined;
      assert.doesNotMatch((await fromHost()).stdout, /pod answered/);
      await assert.rejects(call());
      await gateway.detach(spec);
    } finally {
      stop.abort();
      await agent;
      await gateway?.detach(spec).catch(() => {});
      await backend.stop();
      await lab.close();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    }
  },
});
