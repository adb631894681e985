/**
 * The remote provider's Node with `--remote-pod-network`: registered with the file's `podCIDR`
 * when it has none, and the podCIDRs the server gives it (the controller-manager's) become the
 * tunnel's CNI ranges, the provider's own configureNode and observeNode kept.
 * @module
 */
import assert from "node:assert/strict";
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { RemotePodTunnel, withTunnelNode } from "../../app/run/tunnel.ts";
import type { Provider } from "../../provider/mod.ts";
import { bareProvider, log } from "../../tools/harness/kubelet_api_fakes.ts";
import { ListedServices, loopbackNetwork } from "../../tools/tunnel/server.ts";

function tunnel(podCIDR: string | undefined, ranges: string[][]) {
  return new RemotePodTunnel({
    network: loopbackNetwork(),
    services: new ListedServices(),
    log,
    serverUrl: "https://127.0.0.1:10250",
    agentProgram: ["vkubelet"],
    serverCaPem: "unused",
    podCIDR,
    ranges: { setPodCIDRs: (cidrs) => void ranges.push(cidrs) },
  });
}

Deno.test("a remote provider's Node is registered with the file's podCIDR only when it has none", async () => {
  const observed: string[] = [];
  const provider: Provider = {
    ...bareProvider(),
    configureNode(node: Node) {
      node.metadata = { ...node.metadata, labels: { own: "yes" } };
    },
    observeNode: (node: Node) => void observed.push(node.metadata?.name ?? ""),
  };
  const ranges: string[][] = [];
  const wrapped = withTunnelNode(provider, tunnel("127.9.0.0/24", ranges));
  const node: Node = { metadata: { name: "vk" } };
  await wrapped.configureNode!(node);
  assert.equal(node.spec?.podCIDR, "127.9.0.0/24");
  assert.deepEqual(node.spec?.podCIDRs, ["127.9.0.0/24"]);
  assert.equal(node.metadata?.labels?.own, "yes", "the provider's own configureNode ran");

  const given: Node = { metadata: { name: "vk" }, spec: { podCIDR: "127.8.0.0/24" } };
  await wrapped.configureNode!(given);
  assert.equal(given.spec?.podCIDR, "127.8.0.0/24", "a podCIDR the Node has is kept");

  // The server's Node (the controller-manager's allocation) sets the tunnel's ranges.
  wrapped.observeNode!({ metadata: { name: "vk" }, spec: { podCIDRs: ["127.7.0.0/24"] } });
  assert.deepEqual(ranges, [["127.7.0.0/24"]]);
  assert.deepEqual(observed, ["vk"], "the provider's own observeNode ran");
  assert.equal(typeof wrapped.listPods, "function");
  assert.deepEqual(await wrapped.listPods({}), []);
});

Deno.test("without a podCIDR in the file the Node is registered as the provider makes it", async () => {
  const wrapped = withTunnelNode(bareProvider(), tunnel(undefined, []));
  const node: Node = { metadata: { name: "vk" } };
  await wrapped.configureNode!(node);
  assert.equal(node.spec?.podCIDR, undefined);
});
