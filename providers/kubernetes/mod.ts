/**
 * The kubernetes provider (`--provider kubernetes`): the virtual node's pods run in a second
 * cluster B, as tensile-kube does — bursting, pooling the spare capacity of other clusters. One
 * vkubelet process serves one virtual node for one downstream cluster; to pool several clusters,
 * run one vkubelet per cluster (one virtual node each) and let A's scheduler choose between the
 * nodes. Config in `./config.ts`; what is translated in `./translate/`.
 * @module
 */
import { KubeClient, type KubeClient as KubeClientType } from "../../k8s/mod.ts";
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import { parseKubernetesConfig } from "./config.ts";
import { KubernetesProvider } from "./provider.ts";

export { type KubernetesConfig, parseKubernetesConfig } from "./config.ts";
export { KubernetesProvider } from "./provider.ts";
export { translatePod } from "./translate/translate.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export async function createProvider(
  config: unknown,
  deps: ProviderDeps,
): Promise<KubernetesProvider> {
  const parsed = parseKubernetesConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid kubernetes provider config: ${parsed.errors.join("; ")}`);
  }
  if (parsed.config.gateway && !deps.podNetwork?.gateway) {
    throw new InvalidInputError(
      "invalid kubernetes provider config: gateway: needs the node's pod network for remote pods (start vkubelet with --remote-pod-network=FILE, which gives forwarded pods their IPs in this cluster), or remove gateway",
    );
  }
  // By presence, not `instanceof`: a provider loaded by URL has its own copy of KubeClient.
  if (!deps.kube) {
    throw new InvalidInputError(
      "the kubernetes provider needs vkubelet's client of the upstream cluster (ProviderDeps.kube)",
    );
  }
  let downstream: KubeClientType;
  try {
    const fence = deps.fence;
    downstream = await KubeClient.fromConfig({
      kubeconfig: parsed.config.kubeconfig,
      context: parsed.config.context,
      // `--leader-elect`: a standby reads B (its informers stay warm) but writes nothing there.
      beforeSend: fence ? (request) => fence.guardRequest(request) : undefined,
    });
  } catch (err) {
    throw new InvalidInputError(
      `kubeconfig: cannot load the downstream cluster's kubeconfig ${parsed.config.kubeconfig}: ${
        err instanceof Error ? err.message : err
      }`,
      { cause: err },
    );
  }
  const upstream = deps.kube;
  return new KubernetesProvider(parsed.config, deps, { upstream, downstream });
}
