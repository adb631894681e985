/**
 * The kubernetes provider runs the provider conformance suite (provider/testing): the provider
 * in this process, its pods in a namespace of the second local cluster B, run there by a real
 * process-provider node (tests/providers/kubernetes/_setup.ts), its client of cluster A the
 * admin's. Each provider instance the suite starts (another node, a restart) shares B.
 */
import { KubeClient } from "../../../k8s/mod.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/kubernetes/mod.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { downstreamCluster } from "./_setup.ts";

Deno.test("the kubernetes provider keeps the provider contract", async (t) => {
  const suffix = crypto.randomUUID().slice(0, 6);
  const [a, down] = await Promise.all([useCluster(), downstreamCluster(suffix)]);
  const upstream = await KubeClient.fromConfig({ kubeconfig: a.kubeconfigPath });
  try {
    await runProviderConformance(t, {
      nodeName: `vk-conformance-${suffix}`,
      create: (deps) => createProvider(down.providerConfig, { ...deps, kube: upstream }),
      // Pods start on B's node and status comes back through B's apiserver.
      timeoutMs: 60_000,
    });
  } finally {
    upstream.close();
    await down.close();
  }
});
