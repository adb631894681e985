/**
 * The objects a pod's volumes refer to, as interLink's virtual kubelet collects them for
 * `/create` (interlink-hq/interLink, commit f632175701d78b604138ce2e1e38af13d1f7546b,
 * pkg/virtualkubelet/execute.go `remoteExecutionHandleVolumes`,
 * `remoteExecutionHandleProjectedSource`): every ConfigMap and Secret volume's object, and one
 * ConfigMap per projected volume, named after the volume, mapping each file's path to its
 * content (ConfigMap and Secret items, downward API fields, a service-account token).
 * @module
 */
import type { ConfigMap, Pod, Secret, VolumeProjection } from "kubernetes-types/core/v1.d.ts";
import {
  isKubeNotFound,
  type ProviderKubeClient,
  resolveVolumeFieldRef,
  TransientError,
} from "../../../provider/mod.ts";
import type { PodObjects } from "../client/wire.ts";

/**
 * The pod with each `downwardAPI` volume turned into a projected volume of one downwardAPI
 * source, as interLink's virtual kubelet sends it (interlink-hq/interLink, commit
 * f632175701d78b604138ce2e1e38af13d1f7546b, pkg/virtualkubelet/execute.go:962-1000): plugins
 * mount projected volumes from their maps, and the SLURM plugin drops every mount of a
 * container when one of its volumes is of a kind it does not know.
 */
export function downwardAsProjected(pod: Pod): Pod {
  const volumes = pod.spec?.volumes;
  if (!volumes?.some((v) => v.downwardAPI)) return pod;
  return {
    ...pod,
    spec: {
      ...pod.spec!,
      volumes: volumes.map(({ downwardAPI, ...volume }) =>
        downwardAPI
          ? {
            ...volume,
            projected: {
              ...(downwardAPI.defaultMode !== undefined
                ? { defaultMode: downwardAPI.defaultMode }
                : {}),
              sources: [{ downwardAPI: { items: downwardAPI.items ?? [] } }],
            },
          }
          : volume
      ),
    },
  };
}

/** Options for {@link podObjects}. */
export interface PodObjectsOptions {
  /** The lifetime asked for service-account tokens (`tokenExpirationSeconds`). */
  tokenExpirationSeconds: number;
  signal?: AbortSignal;
}

/**
 * Fetches what the pod's volumes refer to (give it {@link downwardAsProjected}'s pod); a missing
 * one is a TransientError naming it.
 */
export async function podObjects(
  pod: Pod,
  kube: ProviderKubeClient | undefined,
  options: PodObjectsOptions,
): Promise<PodObjects> {
  const { signal, tokenExpirationSeconds } = options;
  const out: PodObjects = { configMaps: [], secrets: [], projected: [] };
  const ns = pod.metadata?.namespace ?? "default";
  const configMaps = new Map<string, Promise<ConfigMap>>();
  const secrets = new Map<string, Promise<Secret>>();
  const getMap = (name: string) => {
    if (!kube) throw noClient();
    if (!configMaps.has(name)) configMaps.set(name, fetchNamed(kube.configMaps, ns, name, signal));
    return configMaps.get(name)!;
  };
  const getSecret = (name: string) => {
    if (!kube) throw noClient();
    if (!secrets.has(name)) secrets.set(name, fetchNamed(kube.secrets, ns, name, signal));
    return secrets.get(name)!;
  };
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.configMap?.name) {
      const map = await optional(getMap(volume.configMap.name), volume.configMap.optional);
      if (map && !out.configMaps.includes(map)) out.configMaps.push(map);
    } else if (volume.secret?.secretName) {
      const secret = await optional(getSecret(volume.secret.secretName), volume.secret.optional);
      if (secret && !out.secrets.includes(secret)) out.secrets.push(secret);
    } else if (volume.projected) {
      const data: Record<string, string> = {};
      for (const source of volume.projected.sources ?? []) {
        await project(pod, source, data, {
          getMap,
          getSecret,
          kube,
          signal,
          tokenExpirationSeconds,
        });
      }
      out.projected.push({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: volume.name, namespace: ns },
        data,
      });
    }
  }
  return out;
}

interface ProjectDeps {
  getMap(name: string): Promise<ConfigMap>;
  getSecret(name: string): Promise<Secret>;
  kube?: ProviderKubeClient;
  signal?: AbortSignal;
  tokenExpirationSeconds: number;
}

async function project(
  pod: Pod,
  source: VolumeProjection,
  data: Record<string, string>,
  deps: ProjectDeps,
): Promise<void> {
  if (source.configMap?.name) {
    const map = await optional(deps.getMap(source.configMap.name), source.configMap.optional);
    const values = map?.data ?? {};
    copyItems(values, source.configMap.items, data);
  } else if (source.secret?.name) {
    const secret = await optional(deps.getSecret(source.secret.name), source.secret.optional);
    const values = Object.fromEntries(
      Object.entries(secret?.data ?? {}).map(([k, v]) => [k, atob(v)]),
    );
    copyItems(values, source.secret.items, data);
  } else if (source.downwardAPI) {
    for (const item of source.downwardAPI.items ?? []) {
      if (item.fieldRef) data[item.path] = resolveVolumeFieldRef(pod, item.fieldRef);
    }
  } else if (source.serviceAccountToken) {
    if (!deps.kube) throw noClient();
    const sa = pod.spec?.serviceAccountName ?? "default";
    const token = await deps.kube.serviceAccounts.createToken(pod.metadata?.namespace ?? "", sa, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: {
        audiences: source.serviceAccountToken.audience ? [source.serviceAccountToken.audience] : [],
        // The job keeps the token it starts with (interLink cannot hand it another): the
        // config's lifetime, at least the pod's own.
        expirationSeconds: Math.max(
          deps.tokenExpirationSeconds,
          source.serviceAccountToken.expirationSeconds ?? 0,
        ),
        boundObjectRef: {
          apiVersion: "v1",
          kind: "Pod",
          name: pod.metadata?.name,
          uid: pod.metadata?.uid,
        },
      },
    }, { signal: deps.signal });
    data[source.serviceAccountToken.path] = token.status?.token ?? "";
  }
}

function copyItems(
  values: Record<string, string>,
  items: { key: string; path: string }[] | undefined,
  data: Record<string, string>,
): void {
  if (!items?.length) Object.assign(data, values);
  else for (const item of items) if (item.key in values) data[item.path] = values[item.key];
}

async function fetchNamed<T>(
  api: { get(ns: string, name: string, o?: { signal?: AbortSignal }): Promise<T> },
  ns: string,
  name: string,
  signal?: AbortSignal,
): Promise<T> {
  try {
    return await api.get(ns, name, { signal });
  } catch (err) {
    if (isKubeNotFound(err)) {
      throw new TransientError(`${ns}/${name} referenced by a volume does not exist yet`, {
        cause: err,
      });
    }
    throw err;
  }
}

async function optional<T>(value: Promise<T>, isOptional?: boolean): Promise<T | undefined> {
  try {
    return await value;
  } catch (err) {
    if (isOptional) return undefined;
    throw err;
  }
}

function noClient(): TransientError {
  return new TransientError(
    "the pod mounts ConfigMaps, Secrets or tokens but the provider has no Kubernetes client",
  );
}
