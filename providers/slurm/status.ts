/**
 * A pod's status from its job and the state files its batch script writes: per container
 * `started`/`exit` files of the current run give running and terminated states; the job's state
 * gives what the files cannot (PENDING with SLURM's reason, and how a job ended that did not
 * let its steps finish: TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, CANCELLED). The kit's
 * `buildPodStatus` makes the kubelet's PodStatus of it.
 * @module
 */
import type { Pod, PodCondition, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  type BackoffEntry,
  buildPodStatus,
  type ContainerReport,
  formatTime,
  type TerminatedReport,
} from "../../provider/mod.ts";
import type { JobInfo } from "./backend.ts";

/** One container's files of the current run. */
export interface RunFiles {
  startedMs?: number;
  /** The container's SLURM step ID in its job (for sstat), once the step started. */
  stepId?: number;
  exit?: { code: number; atMs: number };
}

/** What the provider keeps per pod. */
export interface PodRecord {
  pod: Pod;
  /** Submissions so far minus one: the current run's number, and every container's restarts. */
  run: number;
  /** The current run's job, once submitted. */
  jobId?: number;
  /** The job as last listed. */
  job?: JobInfo;
  /** Per container, the current run's state files. */
  files: Map<string, RunFiles>;
  /** Per container, how its previous run ended. */
  lastTerminated: Map<string, TerminatedReport>;
  /** When the next run is submitted (back-off), in clock ms. */
  restartAtMs?: number;
  /** The kit's crash-loop back-off for the next run. */
  backoff?: BackoffEntry;
  /** Runs no more: ended by its restart policy, or deleted. */
  finished?: boolean;
  /** State files refused (not the job's regular file), each logged once. */
  refused?: Set<string>;
  /** Deleted: every container reads terminated. */
  deleting: boolean;
  startTimeMs: number;
}

/** How SLURM's end states read as a kubelet's terminated state when no exit file says more. */
const END_STATES: Record<string, { exitCode: number; reason: string }> = {
  CANCELLED: { exitCode: 143, reason: "Error" },
  TIMEOUT: { exitCode: 137, reason: "DeadlineExceeded" },
  DEADLINE: { exitCode: 137, reason: "DeadlineExceeded" },
  OUT_OF_MEMORY: { exitCode: 137, reason: "OOMKilled" },
  NODE_FAIL: { exitCode: 137, reason: "NodeFail" },
  BOOT_FAIL: { exitCode: 137, reason: "NodeFail" },
  PREEMPTED: { exitCode: 143, reason: "Preempted" },
};

/** True when the job has ended (or is gone, having been listed before). */
export function jobEnded(job: JobInfo | undefined): boolean {
  return job !== undefined &&
    ![
      "PENDING",
      "RUNNING",
      "CONFIGURING",
      "COMPLETING",
      "SUSPENDED",
      "REQUEUED",
      "RESIZING",
      "SIGNALING",
      "STAGE_OUT",
    ].includes(job.state);
}

/** A container's state in the current run. */
export function containerReport(
  record: PodRecord,
  name: string,
  nowMs: number,
): ContainerReport {
  const files = record.files.get(name) ?? {};
  const job = record.job;
  const common = {
    restartCount: record.run,
    lastTerminated: record.lastTerminated.get(name),
    containerID: record.jobId ? `slurm://${record.jobId}/${name}` : undefined,
  };
  const ended = record.deleting || record.finished || jobEnded(job) ||
    (record.restartAtMs !== undefined);
  if (files.exit) {
    return { ...common, state: { terminated: terminated(record, files, nowMs) } };
  }
  if (ended) {
    return { ...common, state: { terminated: endedWithJob(record, files, nowMs) } };
  }
  if (files.startedMs !== undefined && job?.state === "RUNNING") {
    return { ...common, state: { running: { startedAtMs: files.startedMs } } };
  }
  const message = job?.state === "PENDING"
    ? `SLURM job ${record.jobId} is pending: ${job.reason}`
    : record.jobId
    ? `SLURM job ${record.jobId} is ${job?.state ?? "submitted"}`
    : "waiting to be submitted to SLURM";
  return { ...common, state: { waiting: { reason: "ContainerCreating", message } } };
}

function terminated(record: PodRecord, files: RunFiles, nowMs: number): TerminatedReport {
  const exit = files.exit!;
  // bash reports a signal's end as 128 + signal, as a container runtime does.
  const end = END_STATES[record.job?.state ?? ""];
  const byJob = end && (exit.code === 143 || exit.code === 137 || exit.code > 128);
  return {
    exitCode: exit.code,
    reason: byJob ? end.reason : undefined,
    message: byJob ? `SLURM job ${record.jobId} ${record.job!.state}` : undefined,
    startedAtMs: files.startedMs,
    finishedAtMs: Math.min(exit.atMs, nowMs),
  };
}

function endedWithJob(record: PodRecord, files: RunFiles, nowMs: number): TerminatedReport {
  const job = record.job;
  const end = END_STATES[job?.state ?? ""] ?? { exitCode: record.deleting ? 143 : 0, reason: "" };
  const why = record.deleting && !jobEnded(job)
    ? "the pod was deleted: its SLURM job was cancelled"
    : `SLURM job ${record.jobId ?? "(none)"} ${job?.state ?? "ended"}${
      job && job.reason !== "None" ? ` (${job.reason})` : ""
    }`;
  return {
    exitCode: end.exitCode,
    reason: end.reason || undefined,
    message: why,
    startedAtMs: files.startedMs,
    finishedAtMs: job?.endMs ? Math.min(job.endMs, nowMs) : nowMs,
  };
}

/** The pod's status: its containers' reports through the kit's builder. */
export function podStatusOf(record: PodRecord, hostIp: string, nowMs: number): PodStatus {
  const pod = record.pod;
  const init: Record<string, ContainerReport> = {};
  const containers: Record<string, ContainerReport> = {};
  for (const c of pod.spec?.initContainers ?? []) {
    init[c.name] = containerReport(record, c.name, nowMs);
  }
  for (const c of pod.spec?.containers ?? []) {
    containers[c.name] = containerReport(record, c.name, nowMs);
  }
  const terminal = record.deleting || record.finished === true;
  return buildPodStatus(pod, {
    containers,
    initContainers: init,
    nowMs,
    startTimeMs: record.startTimeMs,
    podIP: hostIp,
    hostIP: hostIp,
    previous: pod.status,
    terminal,
    extraConditions: [jobCondition(record, nowMs)],
    reason: record.job?.state === "TIMEOUT" && terminal ? "DeadlineExceeded" : undefined,
    message: record.job?.state === "TIMEOUT" && terminal
      ? `SLURM ended job ${record.jobId}: its time limit (activeDeadlineSeconds) passed`
      : undefined,
  });
}

/** `slurm.vkubelet.io/Job`: the job's ID, state and SLURM's reason (why it is pending). */
function jobCondition(record: PodRecord, nowMs: number): PodCondition {
  const job = record.job;
  const previous = record.pod.status?.conditions?.find((c) => c.type === JOB_CONDITION);
  const status = job?.state === "RUNNING" ? "True" : "False";
  const reason = job ? camel(job.state) : record.jobId ? "Submitted" : "NotSubmitted";
  const message = job
    ? `job ${record.jobId} ${job.state}${job.reason !== "None" ? `: ${job.reason}` : ""}`
    : record.jobId
    ? `job ${record.jobId} submitted`
    : "not submitted";
  const changed = previous?.status !== status;
  return {
    type: JOB_CONDITION,
    status,
    reason,
    message,
    lastTransitionTime: changed || !previous?.lastTransitionTime
      ? formatTime(nowMs)
      : previous.lastTransitionTime,
  };
}

/** The pod condition type that carries the SLURM job's state and reason. */
export const JOB_CONDITION = "slurm.vkubelet.io/Job";

function camel(state: string): string {
  return state.toLowerCase().split("_").map((w) => w[0].toUpperCase() + w.slice(1)).join("");
}
