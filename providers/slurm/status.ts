/**
 * A job's run as the kit's RemotePods reads it: per container the `started`/`exit` files of the
 * run give running and terminated states; the job's state gives what the files cannot (PENDING
 * with SLURM's reason, and how a job ended that did not let its steps finish: TIMEOUT,
 * OUT_OF_MEMORY, NODE_FAIL, CANCELLED). The kit adds restarts, back-off and the pod's status.
 * @module
 */
import type { Pod, PodCondition } from "kubernetes-types/core/v1.d.ts";
import {
  type ContainerReport,
  formatTime,
  type RemoteRun,
  type TerminatedReport,
} from "../../provider/mod.ts";
import type { JobInfo } from "./client/slurm_client.ts";

/** One container's files of a run. */
export interface RunFiles {
  startedMs?: number;
  /** The container's SLURM step ID in its job (for sstat), once the step started. */
  stepId?: number;
  exit?: { code: number; atMs: number };
}

/**
 * One run of a pod: its job, as last listed, and its containers' state files. The kit keeps it
 * with the pod (RemoteRun.handle); the status poll updates it in place, so that a log or attach
 * session following the run sees it end.
 */
export interface SlurmHandle {
  /** The run's number: the restarts before it (in the job's comment and its files' names). */
  run: number;
  jobId: number;
  /** The job as last listed; undefined until slurmctld lists it. */
  job?: JobInfo;
  /** Per container (init containers too), the run's state files. */
  files: Map<string, RunFiles>;
  /** State files refused (not the job's regular file), each logged once. */
  refused?: Set<string>;
  /** The pod was deleted: its job is cancelled. */
  deleted?: boolean;
  /** How each init container ended in the run before (the kit keeps the containers'). */
  initEnds?: Map<string, TerminatedReport>;
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

/** The run as the kit reads it: each container's report, the job's condition, the pod's IP. */
export function runOf(
  pod: Pod,
  handle: SlurmHandle,
  hostIP: string,
  nowMs: number,
): RemoteRun<SlurmHandle> {
  const reports = (containers?: { name: string }[]) =>
    Object.fromEntries((containers ?? []).map((c) => [c.name, report(handle, c.name, nowMs)]));
  const ended = jobEnded(handle.job);
  // activeDeadlineSeconds became the job's time limit (./request/job_request.ts): SLURM ending it
  // fails the pod, never restarted (kubernetes/kubernetes pkg/kubelet/active_deadline.go).
  const deadline = ended && handle.job?.state === "TIMEOUT" &&
    pod.spec?.activeDeadlineSeconds !== undefined;
  return {
    pod,
    containers: reports(pod.spec?.containers),
    initContainers: reports(pod.spec?.initContainers),
    podIP: hostIP,
    conditions: [jobCondition(pod, handle, nowMs)],
    handle,
    restarts: handle.run,
    // The containers may have exited before slurmctld says how the job ended.
    ending: !ended && !handle.deleted,
    ...(deadline
      ? {
        failsPod: {
          reason: "DeadlineExceeded",
          message: `SLURM ended job ${handle.jobId}: its time limit (activeDeadlineSeconds) passed`,
        },
      }
      : {}),
  };
}

/** How each container of the run ended once the pod's deletion cancelled its job. */
export function deletedEnds(
  pod: Pod,
  handle: SlurmHandle,
  nowMs: number,
): Record<string, TerminatedReport> {
  const deleted = { ...handle, deleted: true };
  return Object.fromEntries((pod.spec?.containers ?? []).map((c) => {
    const state = report(deleted, c.name, nowMs).state;
    return [c.name, "terminated" in state ? state.terminated : endedWithJob(deleted, {}, nowMs)];
  }));
}

/** How the run's init containers ended, by name: the next run's {@link SlurmHandle.initEnds}. */
export function initEndsOf(pod: Pod, handle: SlurmHandle, nowMs: number) {
  const ends = new Map<string, TerminatedReport>();
  for (const { name } of pod.spec?.initContainers ?? []) {
    const state = report(handle, name, nowMs).state;
    if ("terminated" in state) ends.set(name, state.terminated);
  }
  return ends;
}

/** A container's state in the run. */
function report(handle: SlurmHandle, name: string, nowMs: number): ContainerReport {
  const files = handle.files.get(name) ?? {};
  const job = handle.job;
  const lastTerminated = handle.initEnds?.get(name);
  const containerID = `slurm://${handle.jobId}/${name}`;
  const common = { containerID, ...(lastTerminated ? { lastTerminated } : {}) };
  if (files.exit) return { ...common, state: { terminated: terminated(handle, files, nowMs) } };
  if (handle.deleted || jobEnded(job)) {
    return { ...common, state: { terminated: endedWithJob(handle, files, nowMs) } };
  }
  if (files.startedMs !== undefined && job?.state === "RUNNING") {
    return { ...common, state: { running: { startedAtMs: files.startedMs } } };
  }
  const message = job?.state === "PENDING"
    ? `SLURM job ${handle.jobId} is pending: ${job.reason}`
    : `SLURM job ${handle.jobId} is ${job?.state ?? "submitted"}`;
  return { ...common, state: { waiting: { reason: "ContainerCreating", message } } };
}

function terminated(handle: SlurmHandle, files: RunFiles, nowMs: number): TerminatedReport {
  const exit = files.exit!;
  // bash reports a signal's end as 128 + signal, as a container runtime does.
  const end = END_STATES[handle.job?.state ?? ""];
  const byJob = end && (exit.code === 143 || exit.code === 137 || exit.code > 128);
  return {
    exitCode: exit.code,
    reason: byJob ? end.reason : undefined,
    message: byJob ? `SLURM job ${handle.jobId} ${handle.job!.state}` : undefined,
    startedAtMs: files.startedMs,
    finishedAtMs: Math.min(exit.atMs, nowMs),
  };
}

function endedWithJob(handle: SlurmHandle, files: RunFiles, nowMs: number): TerminatedReport {
  const job = handle.job;
  // A job that failed without its container's exit file failed it (its restart policy reads
  // a failure); one that completed let it finish.
  const end = END_STATES[job?.state ?? ""] ??
    { exitCode: handle.deleted && !jobEnded(job) ? 143 : job?.state === "COMPLETED" ? 0 : 1 };
  const why = handle.deleted && !jobEnded(job)
    ? "the pod was deleted: its SLURM job was cancelled"
    : `SLURM job ${handle.jobId} ${job?.state ?? "ended"}${
      job && job.reason !== "None" ? ` (${job.reason})` : ""
    }`;
  return {
    exitCode: end.exitCode,
    reason: "reason" in end ? end.reason : undefined,
    message: why,
    startedAtMs: files.startedMs,
    finishedAtMs: job?.endMs ? Math.min(job.endMs, nowMs) : nowMs,
  };
}

/** `slurm.vkubelet.io/Job`: the job's ID, state and SLURM's reason (why it is pending). */
function jobCondition(pod: Pod, handle: SlurmHandle, nowMs: number): PodCondition {
  const job = handle.job;
  const previous = pod.status?.conditions?.find((c) => c.type === JOB_CONDITION);
  const status = job?.state === "RUNNING" ? "True" : "False";
  const reason = job ? camel(job.state) : "Submitted";
  const message = job
    ? `job ${handle.jobId} ${job.state}${job.reason !== "None" ? `: ${job.reason}` : ""}`
    : `job ${handle.jobId} submitted`;
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
const JOB_CONDITION = "slurm.vkubelet.io/Job";

function camel(state: string): string {
  return state.toLowerCase().split("_").map((w) => w[0].toUpperCase() + w.slice(1)).join("");
}
