/**
 * What the provider keeps on disk so that a restarted vkubelet re-adopts its pods instead of
 * starting them again: one `pod.json` per pod directory, written atomically (write, fsync,
 * rename) after every change. Layout of a pod directory:
 *
 * ```
 * <stateDir>/pods/<namespace>_<name>_<uid>/
 *   pod.json                      this record
 *   work/                         default working directory of every container
 *   volumes/<volume>/             materialised volumes
 *   containers/<container>/       stdout/stderr FIFOs, exit file, logs/<instance>.log[.N]
 *   ns/                           mount-namespace scaffolding (root, per-directory views)
 * ```
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { BackoffEntry } from "../../../provider/mod.ts";
import { join } from "node:path";
import type { PodNetworkRecord } from "../network/pod_network.ts";

/** How one instance of a container ended. */
export interface Termination {
  instance: number;
  exitCode: number;
  /** Completed, Error, OOMKilled, StartError, ContainerStatusUnknown, ... */
  reason: string;
  message?: string;
  startedAtMs: number;
  finishedAtMs: number;
  containerId: string;
}

/** One running instance (start) of a container. */
export interface InstanceRecord {
  instance: number;
  pid: number;
  /** `/proc/<pid>/stat` start time: with the PID, identifies the process across restarts. */
  startTicks: number;
  startedAtMs: number;
  /** Started inside a private mount namespace (exec enters it with nsenter). */
  namespaced: boolean;
  /** The instance's cgroup handle (../host/cgroups.ts: the v2 directory or `v1:` dirs), if any. */
  cgroup?: string;
  containerId: string;
  /** Started with a stdin FIFO (`stdin: true`), which attach sessions write. */
  stdin?: boolean;
  /** The stdin FIFO was closed for good (`stdinOnce` after the first attach session). */
  stdinClosed?: boolean;
  /** Startup probe passed (or none); `started` in the status. */
  started: boolean;
  ready: boolean;
}

/** A container's state across its instances. */
export interface ContainerRecord {
  name: string;
  restartCount: number;
  running?: InstanceRecord;
  terminated?: Termination;
  lastTermination?: Termination;
  waiting?: { reason: string; message?: string };
  /** The kubelet's per-container back-off entry (the kit's provider/restart.ts). */
  backoff?: BackoffEntry;
  /** The image the current or last instance ran. */
  image: string;
}

/** Everything about one pod that must survive a vkubelet restart. */
export interface PodRecord {
  version: 1;
  /** Metadata and spec as last given by the core; status is rebuilt from the rest. */
  pod: Pod;
  podIp: string;
  /** Every pod IP (dual stack), the first being `podIp`; absent in older records. */
  podIps?: string[];
  /** The pod's own network (../network/pod_network.ts), where the provider has one. */
  network?: PodNetworkRecord;
  startTimeMs: number;
  containers: Record<string, ContainerRecord>;
  /** Every regular init container completed. */
  initialized: boolean;
  /** Set by deletePod: nothing restarts any more. */
  deleting?: boolean;
}

/** `<namespace>_<name>_<uid>`, as the kubelet names pod log directories. */
export function podDirName(pod: Pod): string {
  const { namespace, name, uid } = pod.metadata ?? {};
  return `${namespace}_${name}_${uid ?? "nouid"}`;
}

/** The paths of one pod directory. */
export class PodPaths {
  constructor(readonly dir: string) {}
  get record(): string {
    return join(this.dir, "pod.json");
  }
  get work(): string {
    return join(this.dir, "work");
  }
  volume(name: string): string {
    return join(this.dir, "volumes", name);
  }
  container(name: string): string {
    return join(this.dir, "containers", name);
  }
  fifo(container: string, stream: "stdout" | "stderr" | "stdin"): string {
    return join(this.container(container), `${stream}.fifo`);
  }
  exitFile(container: string): string {
    return join(this.container(container), "exit");
  }
  logs(container: string): string {
    return join(this.container(container), "logs");
  }
  log(container: string, instance: number): string {
    return join(this.logs(container), `${instance}.log`);
  }
  get ns(): string {
    return join(this.dir, "ns");
  }
}

/** Writes `record` to `path` atomically: a crash leaves the old or the new file, never half. */
export async function writeRecord(path: string, record: PodRecord): Promise<void> {
  const tmp = `${path}.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o600 });
  try {
    await file.write(new TextEncoder().encode(JSON.stringify(record)));
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(tmp, path);
}

/** Reads every pod record under `<stateDir>/pods`; unreadable ones are reported, not thrown. */
export async function readRecords(
  stateDir: string,
  onError: (dir: string, err: unknown) => void,
): Promise<{ dir: string; record: PodRecord }[]> {
  const root = join(stateDir, "pods");
  const out: { dir: string; record: PodRecord }[] = [];
  let entries: Deno.DirEntry[] = [];
  try {
    entries = [...Deno.readDirSync(root)];
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return out;
    throw err;
  }
  for (const entry of entries) {
    if (!entry.isDirectory) continue;
    const dir = join(root, entry.name);
    try {
      const record = JSON.parse(await Deno.readTextFile(join(dir, "pod.json"))) as PodRecord;
      if (record.version === 1) out.push({ dir, record });
    } catch (err) {
      onError(dir, err);
    }
  }
  return out;
}
