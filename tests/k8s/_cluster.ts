/**
 * Helpers for the k8s integration tests: clients against the test cluster, and waiting.
 * @module
 */
import { KubeClient, type KubeClientOptions } from "../../k8s/client.ts";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";

export type { TestCluster };
export { useCluster };

/** An admin client (client-certificate authentication) for the test cluster. */
export function adminClient(
  cluster: TestCluster,
  options: KubeClientOptions = {},
): Promise<KubeClient> {
  return KubeClient.fromConfig({ kubeconfig: cluster.kubeconfigPath, env: {}, ...options });
}

/** Deletes a namespace without waiting for it to go. */
export async function dropNamespace(cluster: TestCluster, name: string): Promise<void> {
  await cluster.kubectl(["delete", "namespace", name, "--wait=false"]);
}
