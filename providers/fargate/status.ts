/**
 * Status, in two steps: an ECS task (from DescribeTasks) becomes one report per container, and
 * the reports become the pod's status through the status builder. ECS tasks run once: a
 * container that the pod's restart policy restarts is a new task, so restart counts and the
 * previous container's end are kept on the {@link PodRecord}, not in ECS.
 * @module
 */
import type { Task } from "@aws-sdk/client-ecs";
import type {
  ContainerState,
  ContainerStateTerminated,
  Pod,
  PodStatus,
} from "kubernetes-types/core/v1.d.ts";
import { buildPodStatus, type ContainerReport } from "./pod_status.ts";
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
  lastTerminated: Map<string, ContainerStateTerminated>;
  /** Clock time at which the next task runs (back-off after a stop). */
  restartAt?: number;
  /** Final container states once the pod will not run again. */
  finished?: Map<string, ContainerStateTerminated>;
  deleting: boolean;
  /** Containers with an ECS health check: Ready follows their health status. */
  healthChecked: Set<string>;
  /** RFC 3339: when the provider first took the pod. */
  startTime: string;
  /** IDs of earlier tasks, newest last (for `kubectl logs --previous`). */
  previousTaskIds: string[];
}

/** RFC 3339 with seconds, as the API stores times. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

const iso = (d: Date | undefined) => (d ? rfc3339(d.getTime()) : undefined);

/** The pod IP: the private IPv4 address of the task's network interface. */
export function taskIp(task: Task | undefined): string | undefined {
  const eni = task?.attachments?.find((a) => a.type === "ElasticNetworkInterface");
  return eni?.details?.find((d) => d.name === "privateIPv4Address")?.value;
}

/** How one container of a stopped task ended. */
export function terminatedOf(task: Task, name: string, nowMs: number): ContainerStateTerminated {
  const container = task.containers?.find((c) => c.name === name);
  const ranAtAll = container?.exitCode !== undefined && container?.exitCode !== null;
  const exitCode = ranAtAll ? container!.exitCode! : 128;
  const message = [container?.reason, task.stoppedReason].filter((m) => m).join("; ");
  return {
    exitCode,
    reason: !ranAtAll ? "StartError" : exitCode === 0 ? "Completed" : "Error",
    message: message || undefined,
    startedAt: iso(task.startedAt),
    finishedAt: iso(task.stoppedAt) ?? rfc3339(nowMs),
    containerID: containerId(task, name),
  };
}

function containerId(task: Task, name: string): string | undefined {
  return task.taskArn ? `ecs://${taskId(task.taskArn)}/${name}` : undefined;
}

/** One report per container of the pod, from the record's current task. */
export function containerReports(record: PodRecord, nowMs: number): ContainerReport[] {
  const names = containerNames(record);
  const images = new Map(record.pod.spec?.containers?.map((c) => [c.name, c.image]) ?? []);
  return names.map((name) => {
    const image = images.get(name) ?? record.task?.containers?.find((c) => c.name === name)?.image;
    const task = record.task;
    let state: ContainerState;
    let ready = false;
    const finished = record.finished?.get(name);
    if (finished) {
      state = { terminated: finished };
    } else if (!task || !record.taskArn) {
      state = record.restartAt === undefined ? { waiting: { reason: "ContainerCreating" } } : {
        waiting: {
          reason: "CrashLoopBackOff",
          message: `back-off ${
            Math.max(0, Math.ceil((record.restartAt - nowMs) / 1000))
          }s restarting stopped container=${name}`,
        },
      };
    } else if (task.lastStatus === "STOPPED") {
      state = { terminated: terminatedOf(task, name, nowMs) };
    } else if (task.lastStatus === "RUNNING") {
      // The task's status wins over a container still shown as PENDING: in a RUNNING task every
      // essential container has started (moto never moves containers past PENDING).
      const container = task.containers?.find((c) => c.name === name);
      state = { running: { startedAt: iso(task.startedAt) ?? record.startTime } };
      ready = !record.healthChecked.has(name) || container?.healthStatus === "HEALTHY";
    } else if (task.desiredStatus === "STOPPED") {
      state = { running: { startedAt: iso(task.startedAt) ?? record.startTime } };
    } else {
      state = {
        waiting: { reason: "ContainerCreating", message: `ECS task is ${task.lastStatus}` },
      };
    }
    return {
      name,
      image,
      containerID: task ? containerId(task, name) : undefined,
      state,
      lastTerminated: record.lastTerminated.get(name),
      restartCount: record.restarts,
      ready,
    };
  });
}

/** The pod's status from its record. */
export function podStatusOf(
  record: PodRecord,
  hostIP: string,
  nowMs: number,
  terminal = false,
): PodStatus {
  const podIP = record.finished ? undefined : taskIp(record.task);
  return buildPodStatus(record.pod, {
    containers: containerReports(record, nowMs),
    hostIP,
    podIP: podIP ?? record.pod.status?.podIP,
    startTime: record.startTime,
    networkReady: podIP !== undefined,
    now: rfc3339(nowMs),
    terminal,
  });
}

/** Whether the pod's restart policy runs the containers again after `ends`. */
export function shouldRestart(pod: Pod, ends: ContainerStateTerminated[]): boolean {
  const policy = pod.spec?.restartPolicy ?? "Always";
  if (policy === "Always") return true;
  return policy === "OnFailure" && ends.some((e) => e.exitCode !== 0);
}

/** The kubelet's crash-loop back-off: 0 s, then 10 s doubling to 5 min (pkg/kubelet/kubelet.go). */
export function restartDelayMs(restarts: number): number {
  if (restarts <= 0) return 0;
  return Math.min(300_000, 10_000 * 2 ** (restarts - 1));
}

/** How a container ends when its pod is deleted: as ECS said, its last end, or stopped now. */
export function endOnDelete(
  record: PodRecord,
  name: string,
  why: string,
  nowMs: number,
): ContainerStateTerminated {
  const task = record.taskArn ? record.task : undefined;
  if (task?.lastStatus === "STOPPED") return terminatedOf(task, name, nowMs);
  const last = record.lastTerminated.get(name);
  if (!task && last) return last; // between tasks: nothing runs
  return {
    exitCode: 137,
    reason: "Error",
    message: `The task was stopped with ECS StopTask: ${why}`,
    startedAt: task?.startedAt ? rfc3339(task.startedAt.getTime()) : undefined,
    finishedAt: rfc3339(nowMs),
  };
}

/** The pod's container names; from the task for an adopted pod not yet handed over. */
export function containerNames(record: PodRecord): string[] {
  return record.pod.spec?.containers?.map((c) => c.name) ??
    record.task?.containers?.map((c) => c.name ?? "") ?? [];
}
