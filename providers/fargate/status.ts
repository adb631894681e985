/**
 * An ECS task (from DescribeTasks) as one report per container; the kit's RemotePods keeps what
 * ECS does not (restart counts and the previous task's ends: ECS tasks run once, and a pod the
 * restart policy restarts gets a new task) and builds the kubelet's PodStatus from the reports.
 * @module
 */
import type { Task } from "@aws-sdk/client-ecs";
import type {
  ContainerReport,
  ContainerStateReport,
  TerminatedReport,
} from "../../provider/mod.ts";
import { taskId } from "./names.ts";

/** The pod IP: the private IPv4 address of the task's network interface. */
export function taskIp(task: Task | undefined): string | undefined {
  const eni = task?.attachments?.find((a) => a.type === "ElasticNetworkInterface");
  return eni?.details?.find((d) => d.name === "privateIPv4Address")?.value;
}

function containerId(task: Task | undefined, name: string): string | undefined {
  return task?.taskArn ? `ecs://${taskId(task.taskArn)}/${name}` : undefined;
}

/** How one container of a stopped task ended (exit code 128, StartError, if it never ran). */
export function terminatedOf(task: Task, name: string, nowMs: number): TerminatedReport {
  const container = task.containers?.find((c) => c.name === name);
  const ranAtAll = container?.exitCode !== undefined && container?.exitCode !== null;
  const message = [container?.reason, task.stoppedReason].filter((m) => m).join("; ");
  return {
    exitCode: ranAtAll ? container!.exitCode! : 128,
    reason: ranAtAll ? undefined : "StartError",
    message: message || undefined,
    startedAtMs: task.startedAt?.getTime(),
    finishedAtMs: task.stoppedAt?.getTime() ?? nowMs,
    containerID: containerId(task, name),
  };
}

/** What {@link taskReports} needs besides the task. */
export interface TaskReportOptions {
  /** Containers with an ECS health check: Ready follows their health status. */
  healthChecked: ReadonlySet<string>;
  /** A running container's start when ECS gives none: when the provider took the pod. */
  sinceMs: number;
  nowMs: number;
  /** The pod's init containers, in order; default none. */
  inits?: string[];
}

function stateOf(task: Task, name: string, options: TaskReportOptions): ContainerStateReport {
  if (task.lastStatus === "STOPPED") {
    const ended = terminatedOf(task, name, options.nowMs);
    const failed = failedInit(task, options.inits ?? []);
    // Never started, because an init container failed: say which.
    if (failed && ended.reason === "StartError") {
      ended.message = [
        `init container ${failed.name} failed (exit code ${failed.exitCode})`,
        ended.message,
      ].filter((m) => m).join("; ");
    }
    return { terminated: ended };
  }
  // The task's status wins over a container still shown as PENDING: in a RUNNING task every
  // essential container has started (moto never moves containers past PENDING). A task being
  // stopped still runs until it has stopped.
  if (task.lastStatus === "RUNNING" || task.desiredStatus === "STOPPED") {
    return { running: { startedAtMs: task.startedAt?.getTime() ?? options.sinceMs } };
  }
  const reason = options.inits?.length ? "PodInitializing" : "ContainerCreating";
  return { waiting: { reason, message: `ECS task is ${task.lastStatus}` } };
}

/** The first init container that exited non-zero, with its exit code. */
function failedInit(task: Task, inits: string[]): { name: string; exitCode: number } | undefined {
  for (const name of inits) {
    const code = task.containers?.find((c) => c.name === name)?.exitCode;
    if (code !== undefined && code !== null && code !== 0) return { name, exitCode: code };
  }
  return undefined;
}

/**
 * One init container's state. A task is RUNNING only once its app containers run, and those
 * start only after every init container exited 0 (`dependsOn: SUCCESS`): so in a RUNNING task an
 * init container ECS shows nothing more of (moto never moves containers) has completed.
 */
function initStateOf(task: Task, name: string, options: TaskReportOptions): ContainerStateReport {
  const container = task.containers?.find((c) => c.name === name);
  const code = container?.exitCode;
  const startedAtMs = task.startedAt?.getTime() ?? options.sinceMs;
  if (code !== undefined && code !== null) {
    return {
      terminated: {
        exitCode: code,
        reason: code === 0 ? "Completed" : "Error",
        message: container?.reason || undefined,
        startedAtMs,
        finishedAtMs: task.stoppedAt?.getTime() ?? options.nowMs,
        containerID: containerId(task, name),
      },
    };
  }
  if (task.lastStatus === "STOPPED") return { terminated: terminatedOf(task, name, options.nowMs) };
  if (task.lastStatus === "RUNNING") {
    const at = task.startedAt?.getTime() ?? options.sinceMs;
    return {
      terminated: {
        exitCode: 0,
        reason: "Completed",
        startedAtMs: at,
        finishedAtMs: at,
        containerID: containerId(task, name),
      },
    };
  }
  if (container?.lastStatus === "RUNNING") return { running: { startedAtMs } };
  return { waiting: { reason: "PodInitializing" } };
}

/**
 * One report per init container, in order; those after one that failed never ran and wait, as
 * on a kubelet.
 */
export function initReports(
  task: Task,
  names: string[],
  options: TaskReportOptions,
): Record<string, ContainerReport> {
  const reports: Record<string, ContainerReport> = {};
  let failed = false;
  for (const name of names) {
    const state: ContainerStateReport = failed
      ? { waiting: { reason: "PodInitializing" } }
      : initStateOf(task, name, options);
    const done = "terminated" in state && state.terminated.exitCode === 0;
    if ("terminated" in state && !done) failed = true;
    reports[name] = {
      state,
      ready: done,
      containerID: "waiting" in state ? undefined : containerId(task, name),
    };
  }
  return reports;
}

/** One report per container of the pod, by name, from its current task. */
export function taskReports(
  task: Task,
  names: string[],
  options: TaskReportOptions,
): Record<string, ContainerReport> {
  const reports: Record<string, ContainerReport> = {};
  for (const name of names) {
    const state = stateOf(task, name, options);
    const container = task.containers?.find((c) => c.name === name);
    const healthy = !options.healthChecked.has(name) || container?.healthStatus === "HEALTHY";
    reports[name] = {
      state,
      ready: "running" in state && task.lastStatus === "RUNNING" && healthy,
      containerID: containerId(task, name),
    };
  }
  return reports;
}

/** How a container ends when its pod is deleted: as ECS said, or stopped now by StopTask. */
export function endOnDelete(
  task: Task | undefined,
  name: string,
  why: string,
  nowMs: number,
): TerminatedReport {
  if (task?.lastStatus === "STOPPED") return terminatedOf(task, name, nowMs);
  return {
    exitCode: 137,
    reason: "Error",
    message: `The task was stopped with ECS StopTask: ${why}`,
    startedAtMs: task?.startedAt?.getTime(),
    finishedAtMs: nowMs,
    containerID: containerId(task, name),
  };
}

/** A task ECS no longer returns: it stopped long ago and was forgotten. */
export function goneTask(last: Task): Task {
  return {
    ...last,
    lastStatus: "STOPPED",
    stoppedReason: last.stoppedReason || "the task is no longer known to ECS",
  };
}
