/**
 * A {@link VolumeSource} on vkubelet's Kubernetes client (`ProviderDeps.kube`, typed by the kit's
 * {@link ProviderKubeClient}): ConfigMaps, Secrets, claims and their PersistentVolumes by GET
 * (the Node authorizer lets a node read those of its pods), tokens by TokenRequest. A test can
 * pass a fake of the methods it calls.
 * @module
 */
import { isKubeNotFound, type ProviderKubeClient } from "../../../provider/mod.ts";
import type { VolumeSource } from "./volumes.ts";

/** The part of the client the provider uses. */
export type KubeForVolumes =
  & Pick<ProviderKubeClient, "configMaps" | "secrets" | "serviceAccounts">
  & Partial<Pick<ProviderKubeClient, "persistentVolumeClaims" | "persistentVolumes">>;

/** A volume source reading through the Kubernetes client; a missing object reads `undefined`. */
export function kubeVolumeSource(kube: KubeForVolumes): VolumeSource {
  const orUndefined = async <T>(get: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await get();
    } catch (err) {
      if (isKubeNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    getConfigMap: (ns, name, signal) =>
      orUndefined(() => kube.configMaps.get(ns, name, { signal })),
    getSecret: (ns, name, signal) => orUndefined(() => kube.secrets.get(ns, name, { signal })),
    createToken: (ns, sa, request, signal) =>
      kube.serviceAccounts.createToken(ns, sa, request, { signal }),
    getPersistentVolumeClaim: kube.persistentVolumeClaims &&
      ((ns, name, signal) =>
        orUndefined(() => kube.persistentVolumeClaims!.get(ns, name, { signal }))),
    getPersistentVolume: kube.persistentVolumes &&
      ((name, signal) => orUndefined(() => kube.persistentVolumes!.get(name, { signal }))),
  };
}
