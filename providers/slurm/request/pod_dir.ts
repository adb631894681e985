/**
 * The pod's directory in the shared path: launcher scripts (`c/`), logs, state files, the
 * container's home and the pod's volumes — ConfigMap, Secret, downwardAPI, emptyDir and
 * projected (with service-account tokens) — written before the job is submitted. Volumes are
 * written once per pod, as ConfigMap/Secret values stand when it starts (not refreshed while it
 * runs).
 *
 * The directory itself stays vkubelet's (0711: the job enters it, but cannot add, rename or
 * replace what is in it), with `pod.json`; its subdirectories are the job's user's, 0700, and
 * the files in them 0600 (launchers 0700): never readable by other users of the shared path.
 * Everything is written while the directory is still 0700 and before the job exists, so giving
 * the job's files to its user by path cannot be redirected; after that vkubelet touches files
 * in the subdirectories only through `../ownership/job_files.ts`. `sharedDir` must be vkubelet's and not
 * writable by group or others, or a job could swap another pod's directory for a link.
 * @module
 */
import type { KeyToPath, Pod, Volume, VolumeProjection } from "kubernetes-types/core/v1.d.ts";
import {
  InvalidInputError,
  isKubeNotFound,
  type ProviderKubeClient,
  resolveVolumeFieldRef,
  TransientError,
} from "../../../provider/mod.ts";
import type { SlurmConfig } from "../config.ts";
import { hostUser, jobUserOf } from "../ownership/identity.ts";
import { type Owner, readJobFile } from "../ownership/job_files.ts";
import { hostPathOf, launcherScript, podDirName } from "./script.ts";

/** The pod directory's subdirectories, which belong to the job's user. */
const JOB_DIRS = ["c", "logs", "state", "stdin", "home", "volumes"];

/** What writing needs: the client for ConfigMaps, Secrets and tokens. */
export interface PodDirDeps {
  config: SlurmConfig;
  kube?: Pick<ProviderKubeClient, "configMaps" | "secrets" | "serviceAccounts">;
}

/** The pod's directory path. */
export function podDirOf(config: SlurmConfig, pod: Pod): string {
  return `${config.sharedDir}/${podDirName(pod)}`;
}

/**
 * Creates the pod's directory with its launchers and volumes, anew (a stale one of the same pod
 * is removed first).
 */
export async function writePodDir(
  pod: Pod,
  deps: PodDirDeps,
  options: { signal?: AbortSignal },
): Promise<string> {
  const dir = podDirOf(deps.config, pod);
  const me = hostUser();
  const owner = jobUserOf(deps.config, pod.metadata?.namespace);
  await checkSharedDir(deps.config.sharedDir, me);
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.mkdir(dir, { mode: 0o700 });
  await Deno.chmod(dir, 0o700);
  const theJobs: string[] = [];
  const mkdir = async (path: string) => {
    await Deno.mkdir(path, { mode: 0o700 });
    await Deno.chmod(path, 0o700);
    theJobs.push(path);
  };
  const write = async (path: string, data: string | Uint8Array, mode = 0o600) => {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    await Deno.writeFile(path, bytes, { mode, createNew: true });
    await Deno.chmod(path, mode);
    theJobs.push(path);
  };
  for (const sub of JOB_DIRS) await mkdir(`${dir}/${sub}`);
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  for (const c of containers) {
    await write(`${dir}/c/${c.name}.sh`, launcherScript(pod, c, dir, deps.config), 0o700);
  }
  for (const volume of pod.spec?.volumes ?? []) {
    const files = await volumeFiles(pod, volume, deps, options.signal);
    if (files === undefined) continue;
    const root = `${dir}/volumes/${volume.name}`;
    await mkdir(root);
    const made = new Set<string>();
    for (const [path, data] of files) {
      checkRelative(volume.name, path);
      const parts = path.split("/");
      for (let i = 1; i < parts.length; i++) {
        const sub = `${root}/${parts.slice(0, i).join("/")}`;
        if (!made.has(sub)) await mkdir(sub);
        made.add(sub);
      }
      await write(`${root}/${path}`, data);
    }
  }
  await giveTo(theJobs, owner, me);
  // The spec as created, for a restarted vkubelet that adopts the job before the API resyncs;
  // vkubelet's, so that the job cannot change what is adopted.
  const spec = new TextEncoder().encode(JSON.stringify({ metadata: pod.metadata, spec: pod.spec }));
  await Deno.writeFile(`${dir}/pod.json`, spec, { mode: 0o600, createNew: true });
  await Deno.chmod(dir, 0o711);
  return dir;
}

/** Gives `paths` to the job's user: only while the pod directory is vkubelet's alone (0700). */
async function giveTo(paths: string[], owner: Owner, me: Owner): Promise<void> {
  if (owner.uid === me.uid && owner.gid === me.gid) return;
  for (const path of paths) await Deno.chown(path, owner.uid, owner.gid);
}

/** Creates `sharedDir` if needed; refuses one a job could change (another's, or writable). */
async function checkSharedDir(path: string, me: Owner): Promise<void> {
  await Deno.mkdir(path, { recursive: true, mode: 0o711 });
  const info = await Deno.stat(path);
  const mode = (info.mode ?? 0) & 0o7777;
  if (info.uid !== me.uid || (mode & 0o022) !== 0) {
    throw new InvalidInputError(
      `sharedDir ${path} is owned by uid ${info.uid} with mode ${
        mode.toString(8).padStart(4, "0")
      }: a job could replace another pod's directory in it; make it vkubelet's (uid ${me.uid}) and not writable by group or others (chmod 0711)`,
    );
  }
}

/**
 * The pod spec saved by {@link writePodDir}, or undefined (none, or not vkubelet's file in a
 * directory of vkubelet's).
 */
export async function readSavedPod(dir: string): Promise<Pod | undefined> {
  try {
    if (!await isPodDir(dir)) return undefined;
    const file = await readJobFile(`${dir}/pod.json`, hostUser(), { maxBytes: 8 << 20 });
    return file && JSON.parse(new TextDecoder().decode(file.bytes));
  } catch {
    return undefined;
  }
}

/**
 * Removes the pod's directory (after its job ended): only a directory of vkubelet's itself, a
 * single name under sharedDir (./script.ts `podDirName`), never what a link there points to.
 */
export async function removePodDir(config: SlurmConfig, pod: Pod): Promise<void> {
  const dir = podDirOf(config, pod);
  const info = await Deno.lstat(dir).catch((err) => {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  });
  if (!info) return;
  if (!await isPodDir(dir)) {
    throw new InvalidInputError(
      `${dir} is not a pod directory of vkubelet's (uid ${hostUser().uid}): it is ${
        info.isSymlink ? "a symbolic link" : `owned by uid ${info.uid}`
      }; vkubelet leaves it alone, remove it by hand if it is not another's`,
    );
  }
  await Deno.remove(dir, { recursive: true }).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
}

/** True when `dir` itself (not a link's target) is a directory of vkubelet's. */
async function isPodDir(dir: string): Promise<boolean> {
  const info = await Deno.lstat(dir).catch(() => undefined);
  return info !== undefined && info.isDirectory && info.uid === hostUser().uid;
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
  // A shared filesystem's path: nothing to write, only to check.
  if (hostPathOf(volume, deps.config) !== undefined) return undefined;
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
    `volume ${volume.name}: ${kind} volumes are not supported by the slurm provider (only configMap, secret, downwardAPI, emptyDir, projected and hostPath under the config's hostPaths); use a hostPath of a shared filesystem listed in hostPaths instead`,
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
