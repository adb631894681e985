/**
 * The pod controller against the real control plane, with the mock provider: one DELETE per
 * removed pod, readiness gates, and the conditions of a pod held by a config or provider error.
 * @module
 */
import assert from "node:assert/strict";
import { useCluster } from "../../cluster/harness.ts";
import { deployment, log, podsIn, registerNode, runningCount, waitFor } from "./_cluster_node.ts";

const deletes = (requests: Map<string, number>) =>
  Object.fromEntries([...requests].filter(([k]) => k.startsWith("DELETE ")));

Deno.test({
  name: "pods: a Deployment of 30 scaled to 0 costs one DELETE per pod, none answered 404",
  sanitizeResources: false, // the node client's pooled HTTP connections are closed in close()
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    const stop = await node.startController();
    try {
      const kubectl = cluster.kubectlIn(ns);
      await kubectl(["apply", "-f", "-"], JSON.stringify(deployment("web", node.name, 30)));
      await waitFor(
        "30 Running pods",
        90_000,
        async () => runningCount(await podsIn(cluster, ns)) === 30 ? true : undefined,
      );
      await kubectl(["scale", "deployment/web", "--replicas=0"]);
      await waitFor(
        "no pods left",
        60_000,
        async () => (await podsIn(cluster, ns)).length === 0 ? true : undefined,
      );
      // Late syncs (a resync runs every 10 s here) would send their DELETE after the last pod went.
      await new Promise((r) => setTimeout(r, 12_000));
      log.info("DELETEs by code: {deletes}", { deletes: deletes(node.requests) });
      assert.deepEqual(deletes(node.requests), { "DELETE 200": 30 });
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});
