/**
 * Status, in two steps: an ECS task (from DescribeTasks) becomes one report per container, and
 * the kit's status builder (`buildPodStatus`) turns the reports into the kubelet's PodStatus.
 * ECS tasks run once: a container that the pod's restart policy restarts is a new task, so
 * restart counts and the previous container's end are kept on the {@link PodRecord}, not in ECS.
 * @module
 */
import type { Task } from "@aws-sdk/client-ecs";
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  type BackoffEntry,
  buildPodStatus,
  type ContainerReport,
  type ContainerStateReport,
  type TerminatedReport,
} from "../../provider/mod.ts";
import { taskId } from "./names.ts";

/** What the provider keeps for one pod. */
export interface PodRecord {
  /** The last pod the core handed over; for an adopted task, a stub from its tags. */
  pod: Pod;
  taskDefinitionArn?: string;
  /** The current task; unset while waiting to restart or after the pod has finished. */
  taskArn?: string;
  /** The current task as DescribeTasks last showed it. */
  task?: Task;
  /** How many times the pod's containers were restarted (new tasks run). */
  restarts: number;
  /** The previous task's container ends, by container name. */
  lastTerminated: Map<string, TerminatedReport>;
  /** Clock time at which the next task runs (back-off after a stop). */
  restartAt?: number;
  /** The kit's crash-loop back-off for the next task. */
  backoff?: BackoffEntry;
  /** Final container ends once the pod will not run again. */
  finished?: Map<string, TerminatedReport>;
  deleting: boolean;
  /** Containers with an ECS health check: Ready follows their health status. */
  healthChecked: Set<string>;
  /** Clock time at which the provider first took the pod. */
  startTimeMs: number;
  /** IDs of earlier tasks, newest last (for `kubectl logs --previous`). */
  previousTaskIds: string[];
  /** The pod's Secret-sourced env is in its Secrets Manager secret (`./pod_secrets.ts`). */
  secrets?: boolean;
}

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

/** The pod's container names; from the task for an adopted pod not yet handed over. */
export function containerNames(record: PodRecord): string[] {
  return record.pod.spec?.containers?.map((c) => c.name) ??
    record.task?.containers?.map((c) => c.name ?? "") ?? [];
}

function stateOf(record: PodRecord, name: string, nowMs: number): ContainerStateReport {
  const finished = record.finished?.get(name);
  if (finished) return { terminated: finished };
  const task = record.taskArn ? record.task : undefined;
  if (!task) {
    if (record.restartAt === undefined) return { waiting: { reason: "ContainerCreating" } };
    const seconds = Math.max(0, Math.ceil((record.restartAt - nowMs) / 1000));
    return {
      waiting: {
        reason: "CrashLoopBackOff",
        message: `back-off ${seconds}s restarting stopped container=${name}`,
      },
    };
  }
  if (task.lastStatus === "STOPPED") return { terminated: terminatedOf(task, name, nowMs) };
  // The task's status wins over a container still shown as PENDING: in a RUNNING task every
  // essential container has started (moto never moves containers past PENDING). A task being
  // stopped still runs until it has stopped.
  if (task.lastStatus === "RUNNING" || task.desiredStatus === "STOPPED") {
    return { running: { startedAtMs: task.startedAt?.getTime() ?? record.startTimeMs } };
  }
  return { waiting: { reason: "ContainerCreating", message: `ECS task is ${task.lastStatus}` } };
}

/** One report per container of the pod, by name, from the record's current task. */
export function containerReports(
  record: PodRecord,
  nowMs: number,
): Record<string, ContainerReport> {
  const reports: Record<string, ContainerReport> = {};
  for (const name of containerNames(record)) {
    const state = stateOf(record, name, nowMs);
    const container = record.task?.containers?.find((c) => c.name === name);
    const healthy = !record.healthChecked.has(name) || container?.healthStatus === "HEALTHY";
    reports[name] = {
      state,
      lastTerminated: record.lastTerminated.get(name),
      restartCount: record.restarts,
      ready: "running" in state && record.task?.lastStatus === "RUNNING" && healthy,
      containerID: record.taskArn ? containerId(record.task, name) : undefined,
    };
  }
  return reports;
}

/** The pod's status from its record; `terminal` once it is deleted and runs no more. */
export function podStatusOf(
  record: PodRecord,
  hostIP: string,
  nowMs: number,
  terminal = false,
): PodStatus {
  const podIP = record.finished ? undefined : taskIp(record.task);
  return buildPodStatus(record.pod, {
    containers: containerReports(record, nowMs),
    nowMs,
    startTimeMs: record.startTimeMs,
    hostIP,
    podIP: podIP ?? record.pod.status?.podIP,
    sandboxReady: podIP !== undefined,
    terminal,
  });
}

/** How a container ends when its pod is deleted: as ECS said, its last end, or stopped now. */
export function endOnDelete(
  record: PodRecord,
  name: string,
  why: string,
  nowMs: number,
): TerminatedReport {
  const task = record.taskArn ? record.task : undefined;
  if (task?.lastStatus === "STOPPED") return terminatedOf(task, name, nowMs);
  const last = record.lastTerminated.get(name);
  if (!task && last) return last; // between tasks: nothing runs
  return {
    exitCode: 137,
    reason: "Error",
    message: `The task was stopped with ECS StopTask: ${why}`,
    startedAtMs: task?.startedAt?.getTime(),
    finishedAtMs: nowMs,
    containerID: containerId(task, name),
  };
}
