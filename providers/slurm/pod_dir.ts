/**
 * The pod's directory in the shared path: launcher scripts (`c/`), logs, state files and the
 * pod's volumes — ConfigMap, Secret, downwardAPI, emptyDir and projected (with service-account
 * tokens) — written before the job is submitted. Directories are 0700 and files 0600 (launchers
 * 0700), owned by `fileOwner` when configured: never world-readable, since the shared path is
 * seen by every node and user of the cluster. Volumes are written once per pod, as
 * ConfigMap/Secret values stand when it starts (not refreshed while it runs).
 * @module
 */
import type { KeyToPath, Pod, Volume, VolumeProjection } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isKubeNotFound,
  type ProviderKubeClient,
  resolveVolumeFieldRef,
  TransientError,
} from "../../provider/mod.ts";
import type { SlurmConfig } from "./config.ts";
import { launcherScript, podDirName } from "./script.ts";

/** What writing needs: the client for ConfigMaps, Secrets and tokens. */
export interface PodDirDeps {
  config: SlurmConfig;
  kube?: Pick<ProviderKubeClient, "configMaps" | "secrets" | "serviceAccounts">;
}

/** The pod's directory path. */
export function podDirOf(config: SlurmConfig, pod: Pod): string {
  return `${config.sharedDir}/${podDirName(pod)}`;
}

/** Creates the pod's directory with its launchers and volumes; idempotent. */
export async function writePodDir(
  pod: Pod,
  deps: PodDirDeps,
  options: { signal?: AbortSignal },
): Promise<string> {
  const dir = podDirOf(deps.config, pod);
  const owner = deps.config.fileOwner;
  const mkdir = async (path: string) => {
    await Deno.mkdir(path, { recursive: true, mode: 0o700 });
    await Deno.chmod(path, 0o700);
    if (owner) await Deno.chown(path, owner.uid, owner.gid);
  };
  const write = async (path: string, data: string | Uint8Array, mode = 0o600) => {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    await Deno.writeFile(path, bytes, { mode });
    await Deno.chmod(path, mode);
    if (owner) await Deno.chown(path, owner.uid, owner.gid);
  };
  await Deno.mkdir(deps.config.sharedDir, { recursive: true, mode: 0o711 });
  for (const sub of ["", "/c", "/logs", "/state", "/stdin", "/volumes"]) await mkdir(dir + sub);
  // The spec as created, for a restarted vkubelet that adopts the job before the API resyncs.
  await write(`${dir}/pod.json`, JSON.stringify({ metadata: pod.metadata, spec: pod.spec }));
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  for (const c of containers) {
    await write(`${dir}/c/${c.name}.sh`, launcherScript(pod, c, dir, deps.config), 0o700);
  }
  for (const volume of pod.spec?.volumes ?? []) {
    const files = await volumeFiles(pod, volume, deps, options.signal);
    if (files === undefined) continue;
    const root = `${dir}/volumes/${volume.name}`;
    await mkdir(root);
    for (const [path, data] of files) {
      checkRelative(volume.name, path);
      const parts = path.split("/");
      for (let i = 1; i < parts.length; i++) await mkdir(`${root}/${parts.slice(0, i).join("/")}`);
      await write(`${root}/${path}`, data);
    }
  }
  return dir;
}

/** The pod spec saved by {@link writePodDir}, or undefined. */
export async function readSavedPod(dir: string): Promise<Pod | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(`${dir}/pod.json`));
  } catch {
    return undefined;
  }
}

/** Removes the pod's directory (after its job ended). */
export async function removePodDir(config: SlurmConfig, pod: Pod): Promise<void> {
  await Deno.remove(podDirOf(config, pod), { recursive: true }).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
}

type Files = [string, string | Uint8Array][];

/** A volume's files by relative path; undefined for a volume kind with no files (emptyDir). */
async function volumeFiles(
  pod: Pod,
  volume: Volume,
  deps: PodDirDeps,
  signal?: AbortSignal,
): Promise<Files | undefined> {
  if (volume.emptyDir) return [];
  if (volume.configMap || volume.secret || volume.downwardAPI) {
    return await projectionFiles(pod, volume as VolumeProjection, deps, signal);
  }
  if (volume.projected) {
    const out: Files = [];
    for (const source of volume.projected.sources ?? []) {
      out.push(...await projectionFiles(pod, source, deps, signal));
    }
    return out;
  }
  const kind = Object.keys(volume).find((k) => k !== "name") ?? "unknown";
  throw new InvalidInputError(
    `volume ${volume.name}: ${kind} volumes are not supported by the slurm provider (only configMap, secret, downwardAPI, emptyDir and projected); use a path of the shared filesystem through the job's own setup instead`,
  );
}

/** The files of one ConfigMap, Secret, downwardAPI or token source. */
async function projectionFiles(
  pod: Pod,
  source: VolumeProjection & { secret?: { secretName?: string } },
  deps: PodDirDeps,
  signal?: AbortSignal,
): Promise<Files> {
  const ns = pod.metadata?.namespace ?? "default";
  if (source.configMap) {
    const name = source.configMap.name ?? "";
    const cm = await getOrUndefined(() => kube(deps).configMaps.get(ns, name, { signal }));
    if (!cm) return missing("ConfigMap", name, source.configMap.optional);
    const data: Record<string, string | Uint8Array> = { ...cm.data };
    for (const [k, v] of Object.entries(cm.binaryData ?? {})) data[k] = decode64(v);
    return pick(data, source.configMap.items);
  }
  if (source.secret) {
    const name = source.secret.secretName ?? (source.secret as { name?: string }).name ?? "";
    const secret = await getOrUndefined(() => kube(deps).secrets.get(ns, name, { signal }));
    if (!secret) return missing("Secret", name, source.secret.optional);
    const data: Record<string, string | Uint8Array> = { ...secret.stringData };
    for (const [k, v] of Object.entries(secret.data ?? {})) data[k] = decode64(v);
    return pick(data, source.secret.items);
  }
  if (source.downwardAPI) {
    return (source.downwardAPI.items ?? []).map((item) => {
      if (!item.fieldRef) {
        throw new InvalidInputError(
          `downwardAPI item ${item.path}: resourceFieldRef is not supported by the slurm provider; use fieldRef`,
        );
      }
      return [item.path, resolveVolumeFieldRef(pod, item.fieldRef)];
    });
  }
  if (source.serviceAccountToken) {
    const sa = pod.spec?.serviceAccountName ?? "default";
    const answer = await kube(deps).serviceAccounts.createToken(ns, sa, {
      spec: {
        audiences: source.serviceAccountToken.audience ? [source.serviceAccountToken.audience] : [],
        expirationSeconds: source.serviceAccountToken.expirationSeconds ?? 3600,
        boundObjectRef: {
          kind: "Pod",
          apiVersion: "v1",
          name: pod.metadata?.name,
          uid: pod.metadata?.uid,
        },
      },
    }, { signal });
    return [[source.serviceAccountToken.path, answer.status?.token ?? ""]];
  }
  return [];
}

function kube(deps: PodDirDeps) {
  if (!deps.kube) {
    throw new TransientError("the slurm provider has no Kubernetes client to read volume sources");
  }
  return deps.kube;
}

function missing(kind: string, name: string, optional?: boolean): Files {
  if (optional) return [];
  throw new TransientError(`${kind} ${name} of a volume does not exist yet; create it`);
}

function pick(data: Record<string, string | Uint8Array>, items?: KeyToPath[]): Files {
  if (!items?.length) return Object.entries(data);
  return items.filter((i) => Object.hasOwn(data, i.key)).map((i) => [i.path, data[i.key]]);
}

async function getOrUndefined<T>(get: () => Promise<T>): Promise<T | undefined> {
  try {
    return await get();
  } catch (err) {
    if (isKubeNotFound(err)) return undefined;
    throw err;
  }
}

function decode64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** Refuses an item path that would leave the volume's directory. */
function checkRelative(volume: string, path: string): void {
  if (path.startsWith("/") || path.split("/").some((part) => part === ".." || part === "")) {
    throw new InvalidInputError(
      `volume ${volume}: item path ${
        JSON.stringify(path)
      } must be relative and stay inside the volume (no "..", no leading or double "/")`,
    );
  }
}
