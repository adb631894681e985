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
}

function stateOf(task: Task, name: string, options: TaskReportOptions): ContainerStateReport {
  if (task.lastStatus === "STOPPED") return { terminated: terminatedOf(task, name, options.nowMs) };
  // The task's status wins over a container still shown as PENDING: in a RUNNING task every
  // essential container has started (moto never moves containers past PENDING). A task being
  // stopped still runs until it has stopped.
  if (task.lastStatus === "RUNNING" || task.desiredStatus === "STOPPED") {
    return { running: { startedAtMs: task.startedAt?.getTime() ?? options.sinceMs } };
  }
  return { waiting: { reason: "ContainerCreating", message: `ECS task is ${task.lastStatus}` } };
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
