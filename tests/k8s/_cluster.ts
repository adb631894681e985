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

/** Polls `check` until it returns something other than undefined, or fails after `ms`. */
export async function eventually<T>(
  what: string,
  check: () => T | undefined | Promise<T | undefined>,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
}

/** Deletes a namespace without waiting for it to go. */
export async function dropNamespace(cluster: TestCluster, name: string): Promise<void> {
  await cluster.kubectl(["delete", "namespace", name, "--wait=false"]);
}
