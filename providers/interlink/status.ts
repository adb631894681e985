/**
 * interLink's container statuses → the kit's status builder. A plugin reports each container's
 * v1 `ContainerStatus` (interlink-hq/interLink, commit f632175701d78b604138ce2e1e38af13d1f7546b,
 * pkg/interlink/types.go `PodStatus`); interLink's own virtual kubelet derives the phase by hand
 * (pkg/virtualkubelet/execute.go `checkPodsStatus`), here `buildPodStatus` derives it as the
 * kubelet does, by restart policy. Restarts are the provider's (a new job for the pod), so the
 * restart count and last state come from the record, not the plugin.
 * @module
 */
import type { ContainerStatus, Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  type BackoffEntry,
  buildPodStatus,
  type ContainerReport,
  type ContainerStateReport,
  shouldRestartPod,
  type TerminatedReport,
} from "../../provider/mod.ts";
import type { InterlinkPodStatus } from "./wire.ts";

/** What the provider knows of one pod. */
export interface PodRecord {
  /** The pod as last created or updated (status included). */
  pod: Pod;
  /** The plugin's job ID; undefined until `/create` answered. */
  jobId?: string;
  /** The plugin's last answer for the pod. */
  remote?: InterlinkPodStatus;
  /** Jobs started again by the restart policy. */
  restarts: number;
  /** Each container's end in the job before this one. */
  lastTerminated: Map<string, TerminatedReport>;
  /** When the pod was accepted (clock ms). */
  startTimeMs: number;
  /** A waiting reason while there is no job (creating, back-off, plugin unreachable). */
  waiting?: { reason: string; message: string };
  /** Set when no job runs again: the containers' final states. */
  finished?: Map<string, TerminatedReport>;
  /** When the next job starts (restart back-off), clock ms. */
  restartAtMs?: number;
  /** The kit's crash-loop back-off for the next job. */
  backoff?: BackoffEntry;
  /** The plugin stopped reporting the pod. */
  lost?: boolean;
  /** A `/status` answer has shown the current job (a sighting); reset by a new job. */
  seen?: boolean;
  /** Since when (clock ms) and in how many answers in a row the sighted job was missing. */
  missing?: { sinceMs: number; answers: number };
}

const ms = (time: string | undefined, fallback: number) => {
  const t = time ? Date.parse(time) : NaN;
  return Number.isFinite(t) ? t : fallback;
};

/** One container status of the plugin's as the kit's state. */
export function stateOf(status: ContainerStatus | undefined, nowMs: number): ContainerStateReport {
  const state = status?.state;
  if (state?.terminated) return { terminated: terminatedOf(status!, nowMs) };
  if (state?.running) return { running: { startedAtMs: ms(state.running.startedAt, nowMs) } };
  return {
    waiting: {
      reason: state?.waiting?.reason || "ContainerCreating",
      message: state?.waiting?.message,
    },
  };
}

/** A terminated container status as the kit's report. */
export function terminatedOf(status: ContainerStatus, nowMs: number): TerminatedReport {
  const t = status.state!.terminated!;
  return {
    exitCode: t.exitCode ?? 0,
    ...(t.reason ? { reason: t.reason } : {}),
    ...(t.message ? { message: t.message } : {}),
    ...(t.signal !== undefined ? { signal: t.signal } : {}),
    ...(t.startedAt ? { startedAtMs: ms(t.startedAt, nowMs) } : {}),
    finishedAtMs: ms(t.finishedAt, nowMs),
    ...(t.containerID || status.containerID
      ? { containerID: t.containerID || status.containerID }
      : {}),
  };
}

/** The pod's status from what the record holds. */
export function podStatusOf(record: PodRecord, nowMs: number, hostIP: string): PodStatus {
  const pod = record.pod;
  const remote = new Map<string, ContainerStatus>();
  for (const s of [...record.remote?.containers ?? [], ...record.remote?.initContainers ?? []]) {
    if (s?.name) remote.set(s.name, s);
  }
  const report = (name: string): ContainerReport | undefined => {
    const last = record.lastTerminated.get(name);
    const base = { restartCount: record.restarts, ...(last ? { lastTerminated: last } : {}) };
    const finished = record.finished?.get(name);
    if (finished) return { ...base, state: { terminated: finished } };
    if (record.waiting || !record.remote) {
      const waiting = record.waiting ??
        { reason: "ContainerCreating", message: "the plugin has not reported it yet" };
      return { ...base, state: { waiting } };
    }
    const status = remote.get(name);
    const state = stateOf(status, nowMs);
    return {
      ...base,
      state,
      ...(status?.containerID && !("waiting" in state) ? { containerID: status.containerID } : {}),
      ...(status?.imageID ? { imageID: status.imageID } : {}),
      ...("running" in state ? { ready: status?.ready ?? true } : {}),
    };
  };
  const containers: Record<string, ContainerReport> = {};
  for (const c of pod.spec?.containers ?? []) {
    const r = report(c.name);
    if (r) containers[c.name] = r;
  }
  const initContainers: Record<string, ContainerReport> = {};
  const inferred = initContainersDone(record, containers);
  for (const c of pod.spec?.initContainers ?? []) {
    const r = inferred ? inferredInit(c, inferred, record, nowMs) : report(c.name);
    if (r) initContainers[c.name] = r;
  }
  const ip = pod.metadata?.annotations?.["interlink.eu/pod-ip"] ?? hostIP;
  return buildPodStatus(pod, {
    containers,
    initContainers,
    nowMs,
    startTimeMs: record.startTimeMs,
    hostIP,
    podIP: ip,
    terminal: record.finished !== undefined,
  });
}

/**
 * When the plugin reports no init containers but a regular container has started, the init
 * containers have done their work: the SLURM plugin runs them first in the job script and
 * never reports their states (interlink-hq/interlink-slurm-plugin, commit
 * f8451d93e063b7addc606d227a525fe614d91958, pkg/slurm/Status.go reports `pod.Spec.Containers`
 * only, e.g. lines 346-374). The start of the earliest regular container, or undefined.
 */
function initContainersDone(
  record: PodRecord,
  containers: Record<string, ContainerReport>,
): number | undefined {
  if (!record.pod.spec?.initContainers?.length || record.remote?.initContainers?.length) {
    return undefined;
  }
  const starts = Object.values(containers).map((r) =>
    "running" in r.state
      ? r.state.running.startedAtMs
      : "terminated" in r.state
      ? r.state.terminated.startedAtMs ?? r.state.terminated.finishedAtMs
      : undefined
  ).filter((t): t is number => t !== undefined);
  return starts.length ? Math.min(...starts) : undefined;
}

/** An init container the plugin does not report, once the regular ones started at `startMs`. */
function inferredInit(
  c: { name: string; restartPolicy?: string },
  startMs: number,
  record: PodRecord,
  nowMs: number,
): ContainerReport {
  const finished = record.finished?.get(c.name);
  // A sidecar (restartPolicy Always) keeps running beside the regular containers.
  const state: ContainerStateReport = finished
    ? { terminated: finished }
    : c.restartPolicy === "Always"
    ? { running: { startedAtMs: Math.min(startMs, nowMs) } }
    : { terminated: { exitCode: 0, reason: "Completed", finishedAtMs: startMs } };
  return { state, restartCount: record.restarts };
}

/**
 * The plugin's job has ended for good when every regular container is terminated; the restart
 * policy then says whether a new job runs (Always; OnFailure after a non-zero exit).
 */
export function jobEnded(record: PodRecord): { ended: boolean; restart: boolean } {
  const names = (record.pod.spec?.containers ?? []).map((c) => c.name);
  const statuses = new Map((record.remote?.containers ?? []).map((s) => [s.name, s]));
  const ended = names.length > 0 && names.every((n) => statuses.get(n)?.state?.terminated);
  if (!ended) return { ended: false, restart: false };
  const exitCodes = names.map((n) => statuses.get(n)?.state?.terminated?.exitCode ?? 0);
  return { ended, restart: shouldRestartPod(record.pod, exitCodes) };
}
