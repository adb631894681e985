/**
 * interLink's container statuses → the kit's status builder. A plugin reports each container's
 * v1 `ContainerStatus` (interlink-hq/interLink, commit f632175701d78b604138ce2e1e38af13d1f7546b,
 * pkg/interlink/types.go `PodStatus`); interLink's own virtual kubelet derives the phase by hand
 * (pkg/virtualkubelet/execute.go `checkPodsStatus`), here `buildPodStatus` derives it as the
 * kubelet does, by restart policy. Restarts are the kit's RemotePods' (a new job for the pod), so
 * the restart count and last state come from it, not the plugin.
 * @module
 */
import type { ContainerStatus, Pod } from "kubernetes-types/core/v1.d.ts";
import type {
  ContainerReport,
  ContainerStateReport,
  RemoteRun,
  TerminatedReport,
} from "../../provider/mod.ts";
import type { InterlinkPodStatus } from "./client/wire.ts";
import { unknownEnd } from "../../provider/mod.ts";

/** The handle of a pod's run: its job as the plugin last showed it. */
export interface Job {
  /** The plugin's job ID ("" when the plugin gives none). */
  jobId: string;
  /** The plugin's last answer for the pod; undefined until one shows the job. */
  remote?: InterlinkPodStatus;
  /** A `/status` answer has shown this job (a sighting). */
  seen: boolean;
  /** Since when (clock ms) and in how many answers in a row the sighted job was missing. */
  missing?: { sinceMs: number; answers: number };
  /** The plugin stopped reporting the job: there is nothing left to delete. */
  lost?: boolean;
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

/** The pod's run as the job shows it: its containers' reports, init containers included. */
export function runOf(pod: Pod, job: Job, nowMs: number, hostIP: string): RemoteRun<Job> {
  const remote = new Map<string, ContainerStatus>();
  for (const s of [...job.remote?.containers ?? [], ...job.remote?.initContainers ?? []]) {
    if (s?.name) remote.set(s.name, s);
  }
  const report = (name: string): ContainerReport => {
    if (!job.remote) {
      return {
        state: {
          waiting: { reason: "ContainerCreating", message: "the plugin has not reported it yet" },
        },
      };
    }
    const status = remote.get(name);
    const state = stateOf(status, nowMs);
    return {
      state,
      ...(status?.containerID && !("waiting" in state) ? { containerID: status.containerID } : {}),
      ...(status?.imageID ? { imageID: status.imageID } : {}),
      ...("running" in state ? { ready: status?.ready ?? true } : {}),
    };
  };
  const containers: Record<string, ContainerReport> = {};
  for (const c of pod.spec?.containers ?? []) containers[c.name] = report(c.name);
  const inits = pod.spec?.initContainers ?? [];
  const inferred = job.remote?.initContainers?.length ? undefined : startOf(containers);
  const initContainers = Object.fromEntries(inits.map((c) => [
    c.name,
    inferred === undefined ? report(c.name) : inferredInit(c, inferred, nowMs),
  ]));
  return {
    pod,
    containers,
    ...(inits.length ? { initContainers } : {}),
    podIP: pod.metadata?.annotations?.["interlink.eu/pod-ip"] ?? hostIP,
    handle: job,
  };
}

/**
 * The run of a job the plugin no longer reports: its containers ended as the kit says of a lost
 * run (`ContainerStatusUnknown`, 137), with the plugin's `message`.
 */
export function lostRun(
  run: RemoteRun<Job>,
  job: Job,
  message: string,
  nowMs: number,
): RemoteRun<Job> {
  const lost = unknownEnd("lost", { nowMs, detail: message });
  const containers = Object.fromEntries(
    (run.pod.spec?.containers ?? []).map((c) => [c.name, { state: { terminated: lost } }]),
  );
  return { ...run, containers, handle: { ...job, lost: true } };
}

/**
 * When the plugin reports no init containers but a regular container has started, the init
 * containers have done their work: the SLURM plugin runs them first in the job script and
 * never reports their states (interlink-hq/interlink-slurm-plugin, commit
 * f8451d93e063b7addc606d227a525fe614d91958, pkg/slurm/Status.go reports `pod.Spec.Containers`
 * only, e.g. lines 346-374). The start of the earliest regular container, or undefined.
 */
function startOf(containers: Record<string, ContainerReport>): number | undefined {
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
  nowMs: number,
): ContainerReport {
  // A sidecar (restartPolicy Always) keeps running beside the regular containers.
  const state: ContainerStateReport = c.restartPolicy === "Always"
    ? { running: { startedAtMs: Math.min(startMs, nowMs) } }
    : { terminated: { exitCode: 0, reason: "Completed", finishedAtMs: startMs } };
  return { state };
}
