/**
 * Containers' logs where a node's log agent looks for them, as the kubelet lays them out
 * (kubernetes/kubernetes pkg/kubelet/kuberuntime/helpers.go `BuildContainerLogsDirectory`,
 * kuberuntime_container.go `legacyLogSymlink`): `<dir>/<namespace>_<pod>_<uid>/<container>/
 * <restartCount>.log` in the CRI format (./cri_log.ts), linked from
 * `/var/log/containers/<pod>_<namespace>_<container>-<containerID>.log`, rotated as the kubelet's
 * container log manager rotates (kubernetes/kubernetes pkg/kubelet/logs/container_log_manager.go,
 * see ./container_log.ts), and a pod's directory removed once the pod is gone.
 * @module
 */
import type { Clock } from "../base/clock.ts";
import { ContainerLog } from "./container_log.ts";

/** What {@link PodLogDir} needs. */
export interface PodLogDirOptions {
  /** The pods' log directory (`--pod-log-dir`, e.g. `/var/log/pods`). */
  dir: string;
  /** Where the per-container links go; `""` for none. Default `/var/log/containers`. */
  linkDir?: string;
  /** `--container-log-max-size` in bytes: a log past it is rotated; negative: never. */
  maxBytes: number;
  /** `--container-log-max-files`: files kept per container, the current one included (≥ 2). */
  maxFiles: number;
  /** Times of the records and of rotated files' names. */
  clock: Clock;
  /** The node the pods are on: a pod's directory is removed only by its own node's vkubelet. */
  nodeName: string;
  /** Logs a mirror of a remote backend follows at once (`--pod-log-max-streams`); default 200. */
  maxStreams?: number;
  /**
   * A log is rotated no sooner than this after its file became current, ms; default 10 000 (the
   * kubelet's `containerLogMonitorInterval`), so that a log agent sees every file.
   */
  rotationIntervalMs?: number;
}

/** Whose log: a container instance of a pod. */
export interface ContainerLogTarget {
  /** The pod's namespace. */
  namespace: string;
  /** The pod's name. */
  pod: string;
  /** The pod's uid. */
  uid: string;
  /** The container's name. */
  container: string;
  /** The container's restart count: the instance whose log this is. */
  restartCount: number;
  /** The container's ID (`containerStatuses[].containerID`, with or without its scheme). */
  containerId?: string;
}

/** The file in each pod directory that names the node which wrote it. */
const OWNER_FILE = ".vkubelet-node";

/**
 * The kubelet's pod log directory for one node's pods; see the module doc.
 *
 * @example Where a container's log goes
 * ```ts
 * import { PodLogDir } from "@vkubelet/vkubelet/provider";
 * import { FakeClock } from "@vkubelet/vkubelet/provider/testing";
 * import assert from "node:assert/strict";
 * const logs = new PodLogDir({
 *   dir: "/var/log/pods", maxBytes: 10 << 20, maxFiles: 5, clock: new FakeClock(), nodeName: "n1",
 * });
 * const target = { namespace: "ns", pod: "web", uid: "0f1e", container: "app", restartCount: 1 };
 * assert.equal(logs.logPath(target), "/var/log/pods/ns_web_0f1e/app/1.log");
 * // `await logs.open(target)` appends to it, links it from /var/log/containers and rotates it.
 * ```
 */
export class PodLogDir {
  /** The options it was made with. */
  readonly options: PodLogDirOptions;

  /** Checks the rotation numbers as the kubelet does (`NewContainerLogManager`). */
  constructor(options: PodLogDirOptions) {
    if (!Number.isInteger(options.maxFiles) || options.maxFiles <= 1) {
      throw new RangeError(
        `containerLogMaxFiles must be an integer greater than 1, not ${options.maxFiles}`,
      );
    }
    this.options = options;
  }

  /** `<dir>/<namespace>_<pod>_<uid>`. */
  podDir(target: Pick<ContainerLogTarget, "namespace" | "pod" | "uid">): string {
    return `${this.options.dir}/${target.namespace}_${target.pod}_${target.uid}`;
  }

  /** `<dir>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log`. */
  logPath(target: Omit<ContainerLogTarget, "containerId">): string {
    return `${this.podDir(target)}/${target.container}/${target.restartCount}.log`;
  }

  /**
   * Opens (appending, creating the directories) the instance's log and links it from the link
   * directory; the caller closes it.
   */
  async open(target: ContainerLogTarget): Promise<ContainerLog> {
    const podDir = this.podDir(target);
    await Deno.mkdir(`${podDir}/${target.container}`, { recursive: true, mode: 0o755 });
    await Deno.writeTextFile(`${podDir}/${OWNER_FILE}`, this.options.nodeName);
    const path = this.logPath(target);
    const log = await ContainerLog.open(path, this.options);
    await this.#link(target, path).catch(() => {});
    return log;
  }

  /** Removes the pod's directory and its links (the pod is gone). */
  async removePod(target: Pick<ContainerLogTarget, "namespace" | "pod" | "uid">): Promise<void> {
    const podDir = this.podDir(target);
    await this.#unlinkInto(podDir);
    await Deno.remove(podDir, { recursive: true }).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
  }

  /**
   * Removes the directories of this node's pods whose uid is not in `keep` (pods deleted while
   * vkubelet was down, or whose removal was missed); the uids removed.
   */
  async prune(keep: ReadonlySet<string>): Promise<string[]> {
    const removed: string[] = [];
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(this.options.dir));
    } catch {
      return removed;
    }
    for (const entry of entries) {
      const parts = entry.name.split("_");
      if (!entry.isDirectory || parts.length !== 3 || keep.has(parts[2])) continue;
      const owner = await Deno.readTextFile(`${this.options.dir}/${entry.name}/${OWNER_FILE}`)
        .catch(() => undefined);
      if (owner !== this.options.nodeName) continue;
      await this.removePod({ namespace: parts[0], pod: parts[1], uid: parts[2] });
      removed.push(parts[2]);
    }
    return removed;
  }

  /** `/var/log/containers/<pod>_<namespace>_<container>-<containerID>.log` → the log. */
  async #link(target: ContainerLogTarget, path: string): Promise<void> {
    const { linkDir = "/var/log/containers" } = this.options;
    if (!linkDir) return;
    const id = target.containerId?.replace(/^[a-z0-9]+:\/\//, "") ||
      await syntheticContainerId(target);
    const link = `${linkDir}/${target.pod}_${target.namespace}_${target.container}-${id}.log`;
    await Deno.mkdir(linkDir, { recursive: true });
    await Deno.remove(link).catch(() => {});
    await Deno.symlink(path, link);
  }

  /** Removes the links that point into `podDir`. */
  async #unlinkInto(podDir: string): Promise<void> {
    const { linkDir = "/var/log/containers" } = this.options;
    if (!linkDir) return;
    try {
      for await (const entry of Deno.readDir(linkDir)) {
        if (!entry.isSymlink || !entry.name.endsWith(".log")) continue;
        const link = `${linkDir}/${entry.name}`;
        const to = await Deno.readLink(link).catch(() => "");
        if (to.startsWith(`${podDir}/`)) await Deno.remove(link).catch(() => {});
      }
    } catch {
      // no link directory
    }
  }
}

/**
 * A container ID for a backend that reports none: 64 hex digits from the pod's uid, the
 * container and the restart, stable across vkubelet's restarts.
 */
async function syntheticContainerId(target: ContainerLogTarget): Promise<string> {
  const text = `${target.uid}/${target.container}/${target.restartCount}`;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
