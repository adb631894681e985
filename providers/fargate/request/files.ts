/**
 * ConfigMap, Secret, downwardAPI and projected volumes on Fargate, which has no such volumes:
 * their files are read when the pod starts (from the pod's own namespace only, as the kubelet
 * reads them under the Node authorizer), put into the pod's Secrets Manager secret
 * (`../client/pod_secrets.ts`, one key a file, base64), and written into task bind volumes by a
 * non-essential container, {@link FILES_CONTAINER}, that ECS runs first: it reads each file as an
 * ECS `secrets` reference (never a value in the task definition) and exits; the init and app
 * containers start after it succeeded (`./init_containers.ts`) and mount the volumes read-only,
 * as the kubelet mounts them. What a file written once cannot carry is refused naming the volume:
 * service-account tokens (they must be refreshed while the pod runs), cluster trust bundles, and
 * resourceFieldRef files. The files are not refreshed while a task runs; a restarted task gets
 * them as they were when the pod started (or when vkubelet adopted it).
 * @module
 */
import type { ContainerDefinition, Secret as EcsSecret } from "@aws-sdk/client-ecs";
import type {
  ConfigMap,
  KeyToPath,
  Pod,
  Secret,
  Volume,
  VolumeProjection,
} from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isKubeNotFound,
  type ProviderKubeClient,
  resolveVolumeFieldRef,
  TransientError,
} from "../../../provider/mod.ts";

/** The set-up container's name: `_` keeps it apart from any Kubernetes container name. */
export const FILES_CONTAINER = "vkubelet_files";
/** Where the set-up container mounts volume `i`. */
const mountOf = (i: number) => `/vkubelet/${i}`;
/** The pod secret's key of file `i` (no container name starts with `vkubelet_`). */
export const fileKey = (i: number) => `vkubelet_files/${i}`;

/** One file of a volume: where it goes, and its content in base64. */
export interface VolumeFile {
  volume: string;
  path: string;
  mode: number;
  base64: string;
}

/** The volume kinds this module carries. */
export function isFileVolume(v: Volume): boolean {
  return Boolean(v.configMap || v.secret || v.downwardAPI || (v.projected && !isTokenVolume(v)));
}

/** The automatic service-account token volume, which is not mounted on Fargate. */
export function isTokenVolume(v: Volume): boolean {
  return Boolean(v.projected && v.name.startsWith("kube-api-access-"));
}

function refuse(field: string, why: string): never {
  throw new InvalidInputError(`${field}: ${why}; Fargate cannot run this pod as written`);
}

/** Refuses what a file written once at the start cannot carry, naming the volume. */
export function checkFileVolumes(pod: Pod): void {
  (pod.spec?.volumes ?? []).forEach((v, i) => {
    const field = `spec.volumes[${i}]`;
    const check = (items: { resourceFieldRef?: unknown }[] | undefined, at: string) =>
      items?.forEach((item, j) => {
        if (item.resourceFieldRef) {
          refuse(
            `${at}.items[${j}].resourceFieldRef`,
            `volume ${v.name}: resource fields are not written on Fargate`,
          );
        }
      });
    check(v.downwardAPI?.items, `${field}.downwardAPI`);
    if (!v.projected || isTokenVolume(v)) return;
    v.projected.sources?.forEach((s, j) => {
      const at = `${field}.projected.sources[${j}]`;
      if (s.serviceAccountToken) {
        refuse(
          `${at}.serviceAccountToken`,
          `volume ${v.name}: a token must be refreshed while the pod runs, which a file written once at the start cannot be`,
        );
      }
      if (s.clusterTrustBundle) {
        refuse(`${at}.clusterTrustBundle`, `volume ${v.name}: cluster trust bundles are not read`);
      }
      check(s.downwardAPI?.items, `${at}.downwardAPI`);
    });
  });
}

const encode = (text: string) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));

/** Reads what the pod's file volumes hold, from the pod's namespace only; see the module doc. */
export async function volumeFiles(
  pod: Pod,
  kube: ProviderKubeClient | undefined,
  signal?: AbortSignal,
): Promise<VolumeFile[]> {
  const ns = pod.metadata?.namespace ?? "default";
  const files: VolumeFile[] = [];
  const read = async <T>(kind: "configMaps" | "secrets", name: string, optional?: boolean) => {
    if (!kube) throw new TransientError(`no Kubernetes client to read ${kind} ${ns}/${name}`);
    try {
      return await (kube[kind].get(ns, name, { signal }) as Promise<T>);
    } catch (err) {
      if (isKubeNotFound(err) && optional) return undefined;
      if (isKubeNotFound(err)) {
        throw new TransientError(
          `${
            kind === "secrets" ? "Secret" : "ConfigMap"
          } ${ns}/${name} not found; create it in the pod's namespace`,
          { cause: err },
        );
      }
      throw err;
    }
  };
  /** Every key (base64 data as it is), or the items chosen. */
  const add = (
    volume: string,
    data: Record<string, string>,
    items: KeyToPath[] | undefined,
    mode: number,
  ) => {
    const all: KeyToPath[] = Object.keys(data).map((key) => ({ key, path: key }));
    for (const item of items ?? all) {
      if (data[item.key] === undefined) continue;
      files.push({ volume, path: item.path, mode: item.mode ?? mode, base64: data[item.key] });
    }
  };
  const fromMap = (m: ConfigMap | undefined) => ({
    ...Object.fromEntries(Object.entries(m?.data ?? {}).map(([k, v]) => [k, encode(v)])),
    ...m?.binaryData,
  });
  const sources = async (volume: string, list: VolumeProjection[], mode: number) => {
    for (const s of list) {
      if (s.configMap) {
        const m = await read<ConfigMap>("configMaps", s.configMap.name!, s.configMap.optional);
        add(volume, fromMap(m), s.configMap.items, mode);
      } else if (s.secret) {
        const secret = await read<Secret>("secrets", s.secret.name!, s.secret.optional);
        add(volume, secret?.data ?? {}, s.secret.items, mode);
      } else if (s.downwardAPI) {
        for (const item of s.downwardAPI.items ?? []) {
          const value = resolveVolumeFieldRef(pod, item.fieldRef!);
          files.push({ volume, path: item.path, mode: item.mode ?? mode, base64: encode(value) });
        }
      }
    }
  };
  for (const v of pod.spec?.volumes ?? []) {
    if (!isFileVolume(v)) continue;
    if (v.configMap) {
      await sources(v.name, [{ configMap: { ...v.configMap } }], v.configMap.defaultMode ?? 0o644);
    } else if (v.secret) {
      const { secretName: name, optional, items } = v.secret;
      await sources(v.name, [{ secret: { name, optional, items } }], v.secret.defaultMode ?? 0o644);
    } else if (v.downwardAPI) {
      await sources(v.name, [{ downwardAPI: v.downwardAPI }], v.downwardAPI.defaultMode ?? 0o644);
    } else if (v.projected) {
      await sources(v.name, v.projected.sources ?? [], v.projected.defaultMode ?? 0o644);
    }
  }
  return files;
}

/** The files as the pod secret's values, by {@link fileKey}. */
export function fileValues(files: VolumeFile[]): Record<string, string> {
  return Object.fromEntries(files.map((f, i) => [fileKey(i), f.base64]));
}

const quote = (text: string) => `'${text.replaceAll("'", `'"'"'`)}'`;

/**
 * The set-up container that writes `files` into the pod's file volumes (each a task bind volume
 * named as the pod's volume): busybox's `sh` and `base64`, every value from the pod's secret.
 */
export function filesContainer(
  pod: Pod,
  files: VolumeFile[],
  options: { secretArn: string; image: string; memory: number },
): ContainerDefinition {
  const volumes = (pod.spec?.volumes ?? []).filter(isFileVolume).map((v) => v.name);
  const lines = ["set -e"];
  const secrets: EcsSecret[] = [];
  files.forEach((f, i) => {
    const path = `${mountOf(volumes.indexOf(f.volume))}/${f.path}`;
    const env = `VK_FILE_${i}`;
    secrets.push({ name: env, valueFrom: `${options.secretArn}:${fileKey(i)}::` });
    lines.push(
      `mkdir -p "$(dirname ${quote(path)})"`,
      `printf %s "$${env}" | base64 -d > ${quote(path)}`,
      `chmod ${(f.mode & 0o777).toString(8)} ${quote(path)}`,
    );
  });
  return {
    name: FILES_CONTAINER,
    image: options.image,
    essential: false,
    entryPoint: ["sh", "-c"],
    command: [lines.join("\n")],
    secrets: secrets.length ? secrets : undefined,
    mountPoints: volumes.map((v, i) => ({ sourceVolume: v, containerPath: mountOf(i) })),
    memory: options.memory,
  };
}
