/**
 * A {@link VolumeSource} on vkubelet's Kubernetes client (`ProviderDeps.kube`, a `KubeClient`
 * from `k8s/`): ConfigMaps and Secrets by GET, tokens by TokenRequest. Typed by the few methods
 * it calls, so that a test can pass a fake.
 * @module
 */
import type { ConfigMap, Secret } from "kubernetes-types/core/v1.d.ts";
import type { TokenRequest } from "kubernetes-types/authentication/v1.d.ts";
import type { VolumeSource } from "./volumes.ts";

/** The part of `KubeClient` the provider uses. */
export interface KubeForVolumes {
  configMaps: { get(ns: string, name: string, o?: { signal?: AbortSignal }): Promise<ConfigMap> };
  secrets: { get(ns: string, name: string, o?: { signal?: AbortSignal }): Promise<Secret> };
  serviceAccounts: {
    createToken(
      ns: string,
      name: string,
      request: TokenRequest,
      o?: { signal?: AbortSignal },
    ): Promise<TokenRequest>;
  };
}

/** True if `kube` has the methods {@link kubeVolumeSource} calls. */
export function isKubeForVolumes(kube: unknown): kube is KubeForVolumes {
  const k = kube as Partial<KubeForVolumes> | undefined;
  return typeof k?.configMaps?.get === "function" && typeof k.secrets?.get === "function" &&
    typeof k.serviceAccounts?.createToken === "function";
}

function isNotFound(err: unknown): boolean {
  return (err as { code?: number })?.code === 404 ||
    (err as { reason?: string })?.reason === "NotFound";
}

/** A volume source reading through the Kubernetes client. */
export function kubeVolumeSource(kube: KubeForVolumes): VolumeSource {
  const orUndefined = async <T>(get: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await get();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    getConfigMap: (ns, name, signal) =>
      orUndefined(() => kube.configMaps.get(ns, name, { signal })),
    getSecret: (ns, name, signal) => orUndefined(() => kube.secrets.get(ns, name, { signal })),
    createToken: (ns, sa, request, signal) =>
      kube.serviceAccounts.createToken(ns, sa, request, { signal }),
  };
}
