/**
 * ECS as the kit's remote backend: a pod's run is one ECS task (its handle: the task as
 * DescribeTasks last showed it), made from a task definition registered for the pod, with the
 * pod's Secret-sourced env in its own Secrets Manager secret and its task role by its
 * ServiceAccount. The kit's RemotePods adopts, polls, restarts and notifies; this file holds only
 * what is ECS's: tags that carry the pod's identity (so a restarted vkubelet adopts its tasks),
 * DescribeTasks in batches, RunTask with a client token per run, StopTask, and what the pod owns
 * in AWS besides its tasks, deregistered and deleted with it.
 * @module
 */
import type { Task } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Clock,
  type ContainerLogOptions,
  InvalidInputError,
  type Logger,
  NotFoundError,
  type PodEventSink,
  podEventSink,
  type ProviderDeps,
  type ProviderKubeClient,
  type RemoteBackend,
  type RemoteLogRuns,
  type RemoteMakeOptions,
  type RemoteProviderSetup,
  type RemoteRead,
  type RemoteRun,
  standInPod,
  type TerminatedReport,
} from "../../provider/mod.ts";
import type { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import type { FargateConfig } from "./config.ts";
import { readContainerLog } from "./logs.ts";
import { filterLogEventsApi } from "./client/log_events.ts";
import { LogBatch } from "./streams/log_batch.ts";
import { LOG_STREAM_PREFIX, podOfTags, podTags, startedBy, TAGS, taskId } from "./names.ts";
import type { AwsClients } from "./client/aws.ts";
import { PodSecrets, secretValuesOf } from "./client/pod_secrets.ts";
import { endOnDelete, goneTask, initReports, taskIp, taskReports } from "./status.ts";
import type { EcsTasks } from "./client/tasks.ts";
import { taskDefinitionFor } from "./request/task_definition.ts";
import { taskRoleFor } from "./task_role.ts";
import { fileValues, isFileVolume, type VolumeFile, volumeFiles } from "./request/files.ts";
import { capacityStrategyOf } from "./request/placement.ts";

/** What a pod owns in AWS besides its tasks, by pod uid. */
interface PodResources {
  taskDefinitionArn?: string;
  /** The pod's Secret-sourced env is in its Secrets Manager secret (`./client/pod_secrets.ts`). */
  secrets: boolean;
  /** The values last written to the secret (JSON); unknown for an adopted pod. */
  written?: string;
  /** Containers with an ECS health check: Ready follows their health status. */
  healthChecked: Set<string>;
  /** When the provider first took the pod (clock ms). */
  sinceMs: number;
  /** The pod's volume files (`./request/files.ts`), read once. */
  files?: VolumeFile[];
}

/** What {@link FargateBackend} needs. */
export interface FargateBackendDeps {
  ecs: Pick<
    EcsTasks,
    "describe" | "listStartedBy" | "stop" | "run" | "register" | "deregister" | "ensureLogGroup"
  >;
  secrets: Pick<PodSecrets, "put" | "remove">;
  logs?: CloudWatchLogsClient;
  config: FargateConfig;
  nodeName: string;
  clock: Clock;
  event: PodEventSink;
  kube?: ProviderKubeClient;
  /** Where the log mirror's batched reads log their failures. */
  log?: Logger;
  /** The provider's life: log streams end with it. */
  signal: AbortSignal;
}

/** Why attach, exec and port-forward are refused. */
export const NO_SESSION_MANAGER =
  "ECS Exec needs AWS's Session Manager channel, which vkubelet does not speak";

/** The kit's set-up for the provider: this backend, and how RemotePods drives it. */
export function remoteOptions(
  options: {
    config: FargateConfig;
    deps: ProviderDeps;
    aws: AwsClients;
    ecs: EcsTasks;
    signal: AbortSignal;
  },
): RemoteProviderSetup<Task, FargateBackend> {
  const { config, deps, aws, ecs, signal } = options;
  return {
    backend: new FargateBackend({
      ...deps,
      ecs,
      secrets: new PodSecrets(aws.secrets),
      logs: aws.logs,
      config,
      event: podEventSink(deps, "vkubelet-fargate"),
      signal,
    }),
    intervalMs: config.statusInterval,
    // ECS runs no hooks and there is no exec to run them through.
    hooks: "refuse",
    hooksRefused: NO_SESSION_MANAGER,
    // A deletion seen before the tasks are adopted would leave its task running.
    retryList: true,
    keepPodIP: true,
    ...(config.logMirror === "off" ? { mirrorLogs: false as const } : {}),
  };
}

const SILENT: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };

/** Why a pod's task is stopped when the pod goes. */
const DELETED = "the pod was deleted";

/** ECS for RemotePods; see the module doc. */
export class FargateBackend implements RemoteBackend<Task> {
  readonly #d: FargateBackendDeps;
  readonly #pods = new Map<string, PodResources>();
  #logGroup?: Promise<void>;
  /** The log mirror's batched reads (`./streams/log_batch.ts`). */
  readonly logBatch?: LogBatch;

  constructor(deps: FargateBackendDeps) {
    this.#d = deps;
    const { logs, config, clock, log = SILENT } = deps;
    if (logs && config.logMirror === "batched") {
      const api = filterLogEventsApi(logs);
      const [intervalMs, requestsPerSecond] = [
        config.logMirrorInterval,
        config.logMirrorRequestsPerSecond,
      ];
      this.logBatch = new LogBatch({ api, clock, log, intervalMs, requestsPerSecond });
    }
  }

  /** The running tasks this node started, by their tags (ListTasks by `startedBy`). */
  async list(signal: AbortSignal): Promise<RemoteRun<Task>[]> {
    const { ecs, nodeName, clock } = this.#d;
    const tasks = await ecs.describe(await ecs.listStartedBy(startedBy(nodeName), signal), signal);
    const runs: RemoteRun<Task>[] = [];
    for (const task of tasks.values()) {
      const id = podOfTags(task.tags);
      if (!id || id.node !== nodeName || task.lastStatus === "STOPPED") continue;
      const pod = standInPod(id, {
        restartPolicy: id.restartPolicy,
        containers: (task.containers ?? []).map((c) => ({ name: c.name ?? "", image: c.image })),
      });
      const sinceMs = task.createdAt?.getTime() ?? clock.now();
      this.#pods.set(id.uid, {
        taskDefinitionArn: task.taskDefinitionArn,
        secrets: id.secrets,
        healthChecked: new Set(),
        sinceMs,
      });
      runs.push({ ...this.#run(pod, task), restarts: id.run, createdAtMs: sinceMs });
    }
    return runs;
  }

  /** DescribeTasks of every pod's task, 100 a call; a task ECS forgot has stopped. */
  async readMany(
    reads: RemoteRead<Task>[],
    signal?: AbortSignal,
  ): Promise<(RemoteRun<Task> | undefined)[]> {
    const arns = reads.flatMap((r) => r.run?.handle?.taskArn ?? []);
    const found = await this.#d.ecs.describe(arns, signal);
    return reads.map(({ pod, run }) => {
      const last = run?.handle;
      if (!last?.taskArn) return undefined;
      return this.#run(pod, found.get(last.taskArn) ?? goneTask(last));
    });
  }

  /**
   * RunTask of the pod's task definition, registered first for a new pod (with its task role
   * and secret); a pod that cannot run on Fargate leaves nothing behind.
   */
  async make(
    pod: Pod,
    signal?: AbortSignal,
    options: RemoteMakeOptions = { restarts: 0 },
  ): Promise<RemoteRun<Task>> {
    const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
    const { config, nodeName } = this.#d;
    let resources = this.#pods.get(uid);
    const fresh = !resources;
    resources ??= await this.#prepare(pod, signal);
    const tags = podTags({ namespace, name, uid }, nodeName, config.tags);
    tags.push(
      { key: TAGS.restarts, value: String(options.restarts) },
      { key: TAGS.restartPolicy, value: pod.spec?.restartPolicy ?? "Always" },
    );
    if (resources.secrets) tags.push({ key: TAGS.secrets, value: "true" });
    try {
      const task = await this.#d.ecs.run(resources.taskDefinitionArn!, {
        startedBy: startedBy(nodeName),
        tags,
        // One task per run, however often RunTask is retried.
        clientToken: `${uid}-${options.restarts}`.slice(0, 64),
        capacityProviderStrategy: capacityStrategyOf(pod, config),
        signal,
      });
      return this.#run(pod, task);
    } catch (err) {
      if (fresh && err instanceof InvalidInputError) await this.release(pod).catch(() => {});
      throw err;
    }
  }

  /** StopTask of the pod's task, then its task definition and secret; how its containers ended. */
  async remove(
    pod: Pod,
    signal?: AbortSignal,
    run?: RemoteRun<Task>,
  ): Promise<Record<string, TerminatedReport>> {
    const task = run?.handle;
    if (task?.taskArn) await this.#d.ecs.stop(task.taskArn, `vkubelet: ${DELETED}`, signal);
    await this.release(pod, signal);
    // Between tasks (no run) the kit keeps the last task's ends.
    if (!task) return {};
    const now = this.#d.clock.now();
    const names = (pod.spec?.containers ?? []).map((c) => c.name);
    return Object.fromEntries(names.map((n) => [n, endOnDelete(task, n, DELETED, now)]));
  }

  /**
   * Deregisters and deletes the pod's task definition and its secret, if it has them: after its
   * deletion, or after a first RunTask that failed and a pod that is then deleted.
   */
  async release(pod: Pod, signal?: AbortSignal): Promise<void> {
    const resources = this.#pods.get(pod.metadata?.uid ?? "");
    if (!resources) return;
    if (resources.taskDefinitionArn) {
      await this.#d.ecs.deregister(resources.taskDefinitionArn, signal);
      resources.taskDefinitionArn = undefined;
    }
    if (resources.secrets) {
      await this.#d.secrets.remove(identity(pod), signal);
      resources.secrets = false;
    }
    this.#pods.delete(pod.metadata?.uid ?? "");
  }

  /** Stops a second task of a pod found on adoption; a stopped task needs nothing. */
  async discard(_pod: Pod, run: RemoteRun<Task>, signal: AbortSignal): Promise<void> {
    const task = run.handle;
    if (!task?.taskArn || task.lastStatus === "STOPPED") return;
    await this.#d.ecs.stop(
      task.taskArn,
      "vkubelet: a duplicate of another task of the pod",
      signal,
    );
  }

  /** A Warning event for a task that stopped without being asked to. */
  ended(pod: Pod, run: RemoteRun<Task> | undefined, restart: boolean): void {
    const task = run?.handle;
    const why = task?.stoppedReason || task?.stopCode || "no reason given";
    const id = task?.taskArn ? taskId(task.taskArn) : "?";
    const next = restart ? "; it will be restarted" : "";
    this.#d.event(pod, "Warning", "TaskStopped", `ECS task ${id} stopped (${why})${next}`);
  }

  /**
   * The pod as handed over again: an adopted task's next start reads the pod's secret, so its
   * values are written; Ready follows the ECS health checks the pod's definition has.
   */
  async update(pod: Pod, signal?: AbortSignal): Promise<void> {
    const resources = this.#pods.get(pod.metadata?.uid ?? "");
    if (!resources) return;
    await this.#writeSecrets(resources, pod, signal);
    const plan = taskDefinitionFor(pod, this.#d.config, this.#d.nodeName);
    resources.healthChecked = healthChecked(plan.input.containerDefinitions);
  }

  /** The container's log from CloudWatch: the stream of the current task, or of the one before. */
  logs(
    _pod: Pod,
    container: string,
    options: ContainerLogOptions,
    runs: RemoteLogRuns<Task> = {},
  ): Promise<ReadableStream<Uint8Array>> {
    // Between tasks, the current log is the last task's.
    const current = (runs.current ?? runs.previous)?.handle?.taskArn;
    const arn = options.previous ? runs.previous?.handle?.taskArn : current;
    if (!arn || !this.#d.logs) {
      return Promise.reject(
        new NotFoundError(
          options.previous
            ? `container ${container} has not been restarted; there is no previous log`
            : `container ${container} is waiting to start; no log yet`,
        ),
      );
    }
    const signal = AbortSignal.any([this.#d.signal, ...(options.signal ? [options.signal] : [])]);
    return Promise.resolve(readContainerLog({
      logs: this.#d.logs,
      group: this.#d.config.logGroup,
      stream: `${LOG_STREAM_PREFIX}/${container}/${taskId(arn)}`,
      clock: this.#d.clock,
    }, { ...options, signal }));
  }

  /**
   * The container's log as the node's log mirror follows it: the current task's stream read in
   * the node's batches (config `logMirror: batched`); an ended instance's, or with `follow`,
   * through {@link logs}.
   */
  mirrorLogs(
    pod: Pod,
    container: string,
    options: ContainerLogOptions,
    runs: RemoteLogRuns<Task> = {},
  ): Promise<ReadableStream<Uint8Array>> {
    const arn = (runs.current ?? runs.previous)?.handle?.taskArn;
    if (!this.logBatch || !options.follow || options.previous || !arn) {
      return this.logs(pod, container, options, runs);
    }
    const signal = AbortSignal.any([this.#d.signal, ...(options.signal ? [options.signal] : [])]);
    const stream = `${LOG_STREAM_PREFIX}/${container}/${taskId(arn)}`;
    const sinceMs = options.sinceTime?.getTime();
    return Promise.resolve(
      this.logBatch.follow(this.#d.config.logGroup, stream, { sinceMs, signal }),
    );
  }

  /** A task as a run of `pod`. */
  #run(pod: Pod, task: Task): RemoteRun<Task> {
    const resources = this.#pods.get(pod.metadata?.uid ?? "");
    const names = (pod.spec?.containers ?? []).map((c) => c.name);
    const inits = (pod.spec?.initContainers ?? []).map((c) => c.name);
    const nowMs = this.#d.clock.now();
    const options = {
      healthChecked: resources?.healthChecked ?? new Set<string>(),
      sinceMs: resources?.sinceMs ?? nowMs,
      nowMs,
      inits,
    };
    const containers = taskReports(task, names, options);
    const initContainers = inits.length ? initReports(task, inits, options) : undefined;
    const podIP = task.lastStatus === "STOPPED" ? undefined : taskIp(task);
    const sandboxReady = podIP !== undefined;
    return { pod, handle: task, containers, initContainers, podIP, sandboxReady };
  }

  /**
   * Everything a new pod needs before its first task: its task role (a role its ServiceAccount
   * may not have fails the pod before anything is written), the log group, its secret and its
   * task definition; what Fargate runs differently becomes a Normal event.
   */
  async #prepare(pod: Pod, signal?: AbortSignal): Promise<PodResources> {
    const { config, nodeName, ecs } = this.#d;
    const role = await taskRoleFor(pod, config, { kube: this.#d.kube, signal });
    taskDefinitionFor(pod, config, nodeName); // refuses before any write
    await (this.#logGroup ??= ecs.ensureLogGroup(signal).catch((err) => {
      this.#logGroup = undefined;
      throw err;
    }));
    const resources: PodResources = {
      secrets: false,
      healthChecked: new Set(),
      sinceMs: this.#d.clock.now(),
    };
    const secretArn = await this.#writeSecrets(resources, pod, signal);
    const plan = taskDefinitionFor(pod, config, nodeName, {
      taskRoleArn: role.arn,
      secretArn,
      files: resources.files,
    });
    resources.taskDefinitionArn = await ecs.register(plan.input, signal).catch(async (err) => {
      if (secretArn) await this.#d.secrets.remove(identity(pod)).catch(() => {});
      throw err;
    });
    resources.healthChecked = healthChecked(plan.input.containerDefinitions);
    this.#pods.set(pod.metadata?.uid ?? "", resources);
    for (const note of [...role.notes, ...plan.notes]) {
      this.#d.event(pod, "Normal", "FargateAdjusted", note);
    }
    return resources;
  }

  /**
   * Writes the pod's Secret-sourced values into its secret when it has any (or had) and they
   * changed; the secret's ARN when written.
   */
  async #writeSecrets(
    resources: PodResources,
    pod: Pod,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const hasFiles = (pod.spec?.volumes ?? []).some(isFileVolume);
    resources.files ??= hasFiles ? await volumeFiles(pod, this.#d.kube, signal) : undefined;
    const values = { ...secretValuesOf(pod), ...fileValues(resources.files ?? []) };
    const text = JSON.stringify(values);
    if (new TextEncoder().encode(text).length > SECRET_MAX_BYTES) {
      const volumes = (pod.spec?.volumes ?? []).filter(isFileVolume).map((v) => v.name);
      throw new InvalidInputError(
        `spec.volumes (${volumes.join(", ")}): the pod's files and Secret-sourced env come to ` +
          `more than the 64 KiB a Secrets Manager secret holds; mount fewer or smaller files`,
      );
    }
    if (Object.keys(values).length === 0 && !resources.secrets) return undefined;
    if (resources.written === text) return undefined;
    const { tags } = this.#d.config;
    const arn = await this.#d.secrets.put(identity(pod), values, { tags, signal });
    resources.secrets = true;
    resources.written = text;
    return arn;
  }
}

/** The most a Secrets Manager secret's value holds. */
const SECRET_MAX_BYTES = 65_536;

/** A pod's identity as the secret's name needs it. */
function identity(pod: Pod): { namespace: string; name: string; uid: string } {
  const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
  return { namespace, name, uid };
}

function healthChecked(defs: { name?: string; healthCheck?: unknown }[] | undefined): Set<string> {
  return new Set((defs ?? []).filter((d) => d.healthCheck).map((d) => d.name ?? ""));
}
