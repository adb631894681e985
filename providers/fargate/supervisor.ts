/**
 * The one loop behind all pods: first it adopts this node's running tasks (a restarted vkubelet
 * takes them over instead of starting more), then every `statusInterval` it describes every
 * pod's task in batches, applies the pod's restart policy to stopped tasks (a new task after the
 * kubelet's crash-loop back-off, or the end of the pod) and reports what changed. AWS errors
 * here are logged and retried on the next round, never turned into pod failures.
 * @module
 */
import type { Task } from "@aws-sdk/client-ecs";
import { planRestart, type PodEventSink, podKey, shouldRestartPod } from "../../provider/mod.ts";
import { podOfTags, startedBy, taskId } from "./names.ts";
import { containerNames, type PodRecord, terminatedOf } from "./status.ts";
import type { EcsTasks } from "./tasks.ts";
import type { Clock, Logger } from "../../provider/mod.ts";

/** What {@link TaskSupervisor} needs. */
export interface TaskSupervisorDeps {
  ecs: Pick<EcsTasks, "describe" | "listStartedBy" | "stop">;
  /** The provider's records by `ns/name`, shared. */
  records: Map<string, PodRecord>;
  nodeName: string;
  clock: Clock;
  log: Logger;
  intervalMs: number;
  event: PodEventSink;
  /** Runs the record's next task. */
  start: (record: PodRecord, signal: AbortSignal) => Promise<void>;
  /** The record may have a new status. */
  changed: (record: PodRecord) => void;
}

/** Adopts, polls and restarts; see the module doc. */
export class TaskSupervisor {
  readonly #deps: TaskSupervisorDeps;
  #adoptedResolve!: () => void;
  /** Resolves once this node's existing tasks are adopted (or vkubelet stops). */
  readonly adopted: Promise<void> = new Promise((r) => this.#adoptedResolve = r);

  constructor(deps: TaskSupervisorDeps) {
    this.#deps = deps;
  }

  /** Adopts, then polls until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, log, intervalMs } = this.#deps;
    try {
      while (!signal.aborted) {
        try {
          await this.#adopt(signal);
          break;
        } catch (err) {
          log.warning("cannot list this node's ECS tasks yet: {err}", { err: String(err) });
          await clock.sleep(intervalMs, signal);
        }
      }
      this.#adoptedResolve();
      while (!signal.aborted) {
        await clock.sleep(intervalMs, signal);
        await this.poll(signal).catch((err) => {
          if (!signal.aborted) log.warning("ECS status poll failed: {err}", { err: String(err) });
        });
      }
    } catch {
      // Aborted while sleeping.
    } finally {
      this.#adoptedResolve();
    }
  }

  /** One round: describe, apply restart policies, start due tasks, report. */
  async poll(signal: AbortSignal): Promise<void> {
    const { ecs, records, clock } = this.#deps;
    const watched = [...records.values()].filter((r) => r.taskArn && !r.deleting);
    const found = await ecs.describe(watched.map((r) => r.taskArn!), signal);
    for (const record of watched) {
      if (record.deleting || !record.taskArn) continue;
      const task = found.get(record.taskArn) ?? gone(record);
      record.task = task;
      if (task.lastStatus === "STOPPED") this.#stopped(record, task);
      this.#deps.changed(record);
    }
    for (const record of records.values()) {
      if (record.deleting || record.taskArn || record.finished) continue;
      if (record.restartAt === undefined || record.restartAt > clock.now()) continue;
      try {
        record.restarts++;
        await this.#deps.start(record, signal);
      } catch (err) {
        record.restarts--;
        record.restartAt = clock.now() + this.#deps.intervalMs;
        this.#deps.log.warning("{pod}: cannot restart the task yet: {err}", {
          pod: podKey(record.pod.metadata?.namespace, record.pod.metadata?.name),
          err: String(err),
        });
      }
    }
    for (const record of records.values()) {
      if (record.restartAt !== undefined) this.#deps.changed(record);
    }
  }

  /** A task stopped that the pod did not ask to stop: restart or finish, by restart policy. */
  #stopped(record: PodRecord, task: Task): void {
    const now = this.#deps.clock.now();
    const names = containerNames(record);
    const ends = new Map(names.map((n) => [n, terminatedOf(task, n, now)]));
    const restart = shouldRestartPod(record.pod, [...ends.values()].map((e) => e.exitCode));
    this.#deps.event(
      record.pod,
      "Warning",
      "TaskStopped",
      `ECS task ${taskId(record.taskArn!)} stopped (${
        task.stoppedReason || task.stopCode || "no reason given"
      })${restart ? "; it will be restarted" : ""}`,
    );
    if (!restart) {
      record.finished = ends;
      return;
    }
    record.lastTerminated = ends;
    record.previousTaskIds.push(taskId(record.taskArn!));
    record.taskArn = undefined;
    ({ atMs: record.restartAt, entry: record.backoff } = planRestart(record.backoff, now));
  }

  /** Takes over the running tasks this node started, by their tags. */
  async #adopt(signal: AbortSignal): Promise<void> {
    const { ecs, records, nodeName } = this.#deps;
    const arns = await ecs.listStartedBy(startedBy(nodeName), signal);
    const tasks = await ecs.describe(arns, signal);
    for (const task of tasks.values()) {
      const id = podOfTags(task.tags);
      if (!id || id.node !== nodeName || task.lastStatus === "STOPPED") continue;
      const k = podKey(id.namespace, id.name);
      const existing = records.get(k);
      if (existing && existing.restarts >= id.restarts) {
        await ecs.stop(task.taskArn!, "vkubelet: a duplicate of another task of the pod", signal);
        continue;
      }
      if (existing?.taskArn) {
        await ecs.stop(
          existing.taskArn,
          "vkubelet: a duplicate of another task of the pod",
          signal,
        );
      }
      records.set(k, {
        // A stand-in until the core hands the pod over (createPod): its containers from the task.
        pod: {
          metadata: { namespace: id.namespace, name: id.name, uid: id.uid },
          spec: {
            restartPolicy: id.restartPolicy,
            containers: (task.containers ?? []).map((c) => ({
              name: c.name ?? "",
              image: c.image,
            })),
          },
        },
        taskDefinitionArn: task.taskDefinitionArn,
        taskArn: task.taskArn,
        task,
        restarts: id.restarts,
        lastTerminated: new Map(),
        deleting: false,
        healthChecked: new Set(),
        startTimeMs: task.createdAt?.getTime() ?? this.#deps.clock.now(),
        previousTaskIds: [],
        secrets: id.secrets,
      });
      this.#deps.log.info("{pod}: adopted ECS task {task}", { pod: k, task: task.taskArn });
    }
  }
}

/** A task ECS no longer returns: it stopped long ago and was forgotten. */
function gone(record: PodRecord): Task {
  return {
    ...record.task,
    lastStatus: "STOPPED",
    stoppedReason: record.task?.stoppedReason || "the task is no longer known to ECS",
  };
}
