/**
 * The fargate provider: each pod bound to the virtual node runs as one ECS task on Fargate, from
 * a task definition registered for the pod (deregistered when the pod is deleted). One loop
 * polls DescribeTasks for all pods (`statusInterval`), applies the restart policy by running a
 * new task after the kubelet's back-off, and pushes status through {@link notifyPods}. On start
 * it adopts this node's running tasks (ListTasks by `startedBy`, identity from the tags), so a
 * restarted vkubelet never runs a pod twice.
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  backendUnreachable,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  InvalidInputError,
  NotFoundError,
  type PodRef,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
} from "../../provider/mod.ts";
import type { AwsClients } from "./aws.ts";
import type { FargateConfig } from "./config.ts";
import { type PodEventSink, podEventSink, podKey, PodTable } from "../../provider/mod.ts";
import { readContainerLog } from "./logs.ts";
import { LOG_STREAM_PREFIX, podTags, startedBy, TAGS, taskId } from "./names.ts";
import { containerNames, endOnDelete, type PodRecord, podStatusOf } from "./status.ts";
import { EcsTasks } from "./tasks.ts";
import { TaskSupervisor } from "./supervisor.ts";
import { taskDefinitionFor } from "./task_definition.ts";
import { taskRoleFor } from "./task_role.ts";
import { PodSecrets, secretValuesOf } from "./pod_secrets.ts";

/** Runs the virtual node's pods as Fargate tasks; see the module doc. */
export class FargateProvider implements Provider {
  readonly #config: FargateConfig;
  readonly #deps: ProviderDeps;
  readonly #aws: AwsClients;
  readonly #ecs: EcsTasks;
  readonly #pods: PodTable<PodRecord>;
  readonly #event: PodEventSink;
  readonly #supervisor: TaskSupervisor;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #running: Promise<void>;
  readonly #secrets: PodSecrets;
  /** Secret-sourced env values come marked, and go to Secrets Manager (`./pod_secrets.ts`). */
  readonly secretEnvRefs = true;
  #logGroup?: Promise<void>;

  constructor(config: FargateConfig, deps: ProviderDeps, aws: AwsClients) {
    this.#config = config;
    this.#deps = deps;
    this.#aws = aws;
    this.#ecs = new EcsTasks(aws, config);
    this.#secrets = new PodSecrets(aws.secrets);
    this.#event = podEventSink(deps, "vkubelet-fargate");
    this.#signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#pods = new PodTable<PodRecord>({
      statusOf: (record, terminal) =>
        podStatusOf(record, deps.internalIp, deps.clock.now(), terminal),
      log: deps.log,
    });
    this.#supervisor = new TaskSupervisor({
      ecs: this.#ecs,
      records: this.#pods.records,
      nodeName: deps.nodeName,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      event: this.#event,
      start: (record, signal) => this.#startTask(record, signal),
      changed: (record) => this.#pods.notify(record),
    });
    this.#pods.holdUntil(this.#supervisor.adopted);
    this.#running = this.#supervisor.run(this.#signal);
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    // Adopted tasks first: a pod that already runs must not get a second task.
    await this.#pods.adopted(options.signal);
    const { namespace, name, uid } = pod.metadata ?? {};
    const k = podKey(namespace, name);
    let record = this.#pods.records.get(k);
    if (record && record.pod.metadata?.uid !== uid) {
      // An older pod of the same name: its task must not stand for this one.
      await this.#finish(record, "replaced by a newer pod of the same name", options.signal);
      record = undefined;
    }
    if (record) {
      const plan = taskDefinitionFor(pod, this.#config, this.#deps.nodeName);
      // An adopted task reads the pod's secret at its next start: the values must be there.
      await this.#writeSecrets(record, pod, options.signal);
      record.pod = structuredClone(pod);
      record.healthChecked = healthChecked(plan.input.containerDefinitions);
      if (record.taskArn || record.restartAt !== undefined || record.finished) {
        this.#pods.notify(record);
        return;
      }
    } else {
      // A role the ServiceAccount may not have fails the pod before anything is registered.
      const role = await taskRoleFor(pod, this.#config, { kube: this.#deps.kube, ...options });
      taskDefinitionFor(pod, this.#config, this.#deps.nodeName); // refuses before any write
      await (this.#logGroup ??= this.#ecs.ensureLogGroup(options.signal).catch((err) => {
        this.#logGroup = undefined;
        throw err;
      }));
      const secretArn = await this.#writeSecrets(undefined, pod, options.signal);
      const plan = taskDefinitionFor(pod, this.#config, this.#deps.nodeName, {
        taskRoleArn: role.arn,
        secretArn,
      });
      const arn = await this.#ecs.register(plan.input, options.signal).catch(async (err) => {
        if (secretArn) await this.#secrets.remove(identity(pod)).catch(() => {});
        throw err;
      });
      record = {
        pod: structuredClone(pod),
        taskDefinitionArn: arn,
        restarts: 0,
        lastTerminated: new Map(),
        deleting: false,
        healthChecked: healthChecked(plan.input.containerDefinitions),
        startTimeMs: this.#deps.clock.now(),
        previousTaskIds: [],
        secrets: secretArn !== undefined,
      };
      this.#pods.records.set(k, record);
      for (const note of [...role.notes, ...plan.notes]) {
        this.#event(pod, "Normal", "FargateAdjusted", note);
      }
    }
    try {
      await this.#startTask(record, options.signal);
    } catch (err) {
      if (err instanceof InvalidInputError) {
        this.#pods.records.delete(k);
        await this.#ecs.deregister(record.taskDefinitionArn!).catch(() => {});
        if (record.secrets) await this.#secrets.remove(identity(record.pod)).catch(() => {});
      }
      throw err;
    }
  }

  async updatePod(pod: Pod, options: CallOptions): Promise<void> {
    // A task's definition cannot change; metadata (labels, annotations) is taken over, and
    // changed Secret values go into the pod's secret, read by its next task.
    const record = this.#pods.get(pod.metadata?.namespace, pod.metadata?.name);
    if (record && record.pod.metadata?.uid === pod.metadata?.uid) {
      if (record.secrets) await this.#writeSecrets(record, pod, options.signal);
      record.pod = { ...structuredClone(pod), status: record.pod.status };
      this.#pods.notify(record);
    }
  }

  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    const record = await this.#pods.ofPod(pod, options.signal);
    if (!record) return;
    await this.#finish(record, "the pod was deleted", options.signal);
  }

  getPod(namespace: string, name: string, _options: CallOptions): Promise<Pod | undefined> {
    return this.#pods.getPod(namespace, name);
  }

  listPods(options: CallOptions): Promise<Pod[]> {
    return this.#pods.listPods(options.signal);
  }

  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.#pods.subscribe(callback);
  }

  configureNode(node: Node): void {
    applyProviderNode(node, {
      capacity: { ...this.#config.capacity },
      labels: {
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": this.#config.region,
        "vkubelet.io/provider": "fargate",
      },
    }, this.#deps);
  }

  async ping(options: CallOptions): Promise<void> {
    const config = this.#config;
    const endpoint = config.endpoint ?? `https://ecs.${config.region}.amazonaws.com`;
    await this.#ecs.ping(options.signal).catch((err) => {
      throw backendUnreachable(
        `ECS cluster ${config.cluster} in ${config.region} (${endpoint})`,
        err,
        {
          reason: "EcsUnreachable",
        },
      );
    });
  }

  getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return settle(() => {
      const record = this.#known(ref.namespace, ref.pod, ref.container);
      const current = record.taskArn ?? record.task?.taskArn;
      const id = options.previous ? record.previousTaskIds.at(-1) : current && taskId(current);
      if (!id) {
        throw new NotFoundError(
          options.previous
            ? `container ${ref.container} has not been restarted; there is no previous log`
            : `container ${ref.container} is waiting to start; no log yet`,
        );
      }
      const signal = AbortSignal.any([this.#signal, ...(options.signal ? [options.signal] : [])]);
      return readContainerLog({
        logs: this.#aws.logs,
        group: this.#config.logGroup,
        stream: `${LOG_STREAM_PREFIX}/${ref.container}/${id}`,
        clock: this.#deps.clock,
      }, { ...options, signal });
    });
  }

  runInContainer(ref: ContainerRef): Promise<number> {
    return refuseStreaming(
      "exec",
      NO_SESSION_MANAGER,
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  attachToContainer(ref: ContainerRef): Promise<void> {
    return refuseStreaming(
      "attach",
      NO_SESSION_MANAGER,
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  portForward(ref: PodRef): Promise<void> {
    return refuseStreaming(
      "portForward",
      NO_SESSION_MANAGER,
      () => this.#known(ref.namespace, ref.name),
    );
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
    this.#aws.ecs.destroy();
    this.#aws.logs.destroy();
    this.#aws.secrets.destroy();
  }

  /**
   * Writes the pod's Secret-sourced values into its secret when it has any (or had: the record
   * says so) and they changed; the secret's ARN, or `undefined` when the pod has none.
   */
  async #writeSecrets(
    record: PodRecord | undefined,
    pod: Pod,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const values = secretValuesOf(pod);
    const none = Object.keys(values).length === 0;
    if (none && !record?.secrets) return undefined;
    const before = record?.secrets && record.pod.spec && secretValuesOf(record.pod);
    if (before && JSON.stringify(before) === JSON.stringify(values)) return undefined;
    const arn = await this.#secrets.put(identity(pod), values, { tags: this.#config.tags, signal });
    if (record) record.secrets = true;
    return arn;
  }

  /** The record of a pod (and container) on this node, or {@link NotFoundError}. */
  #known(namespace: string, pod: string, container?: string): PodRecord {
    const record = this.#pods.get(namespace, pod);
    if (!record) throw new NotFoundError(`pod ${namespace}/${pod} is not on this node`);
    if (container !== undefined && !containerNames(record).includes(container)) {
      throw new NotFoundError(`pod ${namespace}/${pod} has no container ${container}`);
    }
    return record;
  }

  /** RunTask for the record's task definition; the record then follows that task. */
  async #startTask(record: PodRecord, signal?: AbortSignal): Promise<void> {
    const { namespace = "", name = "", uid = "" } = record.pod.metadata ?? {};
    const tags = podTags({ namespace, name, uid }, this.#deps.nodeName, this.#config.tags);
    tags.push({ key: TAGS.restarts, value: String(record.restarts) }, {
      key: TAGS.restartPolicy,
      value: record.pod.spec?.restartPolicy ?? "Always",
    });
    if (record.secrets) tags.push({ key: TAGS.secrets, value: "true" });
    const task = await this.#ecs.run(record.taskDefinitionArn!, {
      startedBy: startedBy(this.#deps.nodeName),
      tags,
      clientToken: `${uid}-${record.restarts}`.slice(0, 64),
      signal,
    });
    record.taskArn = task.taskArn;
    record.task = task;
    record.restartAt = undefined;
    this.#pods.notify(record);
  }

  /** Stops the pod's task, deregisters its definition, reports it terminated and forgets it. */
  async #finish(record: PodRecord, why: string, signal?: AbortSignal): Promise<void> {
    record.deleting = true;
    if (record.taskArn) await this.#ecs.stop(record.taskArn, `vkubelet: ${why}`, signal);
    // Every container ends terminated (the contract of deletePod).
    record.finished ??= new Map(
      containerNames(record).map((n) => [n, endOnDelete(record, n, why, this.#deps.clock.now())]),
    );
    record.taskArn = undefined;
    if (record.taskDefinitionArn) {
      await this.#ecs.deregister(record.taskDefinitionArn, signal);
      record.taskDefinitionArn = undefined;
    }
    if (record.secrets) {
      await this.#secrets.remove(identity(record.pod), signal);
      record.secrets = false;
    }
    this.#pods.notify(record, true);
    this.#pods.forget(record);
  }
}

/** A pod's identity as the secret's name needs it. */
function identity(pod: Pod): { namespace: string; name: string; uid: string } {
  const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
  return { namespace, name, uid };
}

function healthChecked(defs: { name?: string; healthCheck?: unknown }[] | undefined): Set<string> {
  return new Set((defs ?? []).filter((d) => d.healthCheck).map((d) => d.name ?? ""));
}

/** `work()` as a promise: its value, or its exception as a rejection. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Why attach, exec and port-forward are refused. */
const NO_SESSION_MANAGER =
  "ECS Exec needs AWS's Session Manager channel, which vkubelet does not speak";
