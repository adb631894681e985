/**
 * The eci provider: each pod bound to the virtual node runs as one ECI container group, made
 * with CreateContainerGroup (a `ClientToken` per pod and generation, so a retried create makes
 * one group). One loop (`./supervisor.ts`) polls DescribeContainerGroups in batches, relays ECI's
 * events and makes a group deleted behind vkubelet's back again by the restart policy; status
 * goes out through {@link notifyPods}. On start it adopts this node's groups by tag, so a
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
  type ExecOptions,
  NotFoundError,
  type PodRef,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { EciApi } from "./api.ts";
import type { EciConfig } from "./config.ts";
import { checkPod, groupRequestFor } from "./container_group.ts";
import { type PodEventSink, podEventSink, podKey, PodTable } from "../../provider/mod.ts";
import { runExecSession } from "./exec.ts";
import { readContainerLog } from "./logs.ts";
import { registryCredentials } from "./pull_secrets.ts";
import { podStatsOf, statsSummary } from "./stats.ts";
import { containerNames, endsNow, type PodRecord, podStatusOf } from "./status.ts";
import { GroupSupervisor } from "./supervisor.ts";
import { resolveVolumes } from "./volumes.ts";

/** Runs the virtual node's pods as ECI container groups; see the module doc. */
export class EciProvider implements Provider {
  readonly #config: EciConfig;
  readonly #deps: ProviderDeps;
  readonly #api: EciApi;
  readonly #pods: PodTable<PodRecord>;
  readonly #event: PodEventSink;
  readonly #supervisor: GroupSupervisor;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #running: Promise<void>;
  readonly #startMs: number;
  /** ECI sets `status.podIP` in env itself (`FieldRef.FieldPath`), once the group has its IP. */
  readonly deferredFieldPaths = ["status.podIP"] as const;

  constructor(config: EciConfig, deps: ProviderDeps, api: EciApi) {
    this.#config = config;
    this.#deps = deps;
    this.#api = api;
    this.#startMs = deps.clock.now();
    this.#event = podEventSink(deps, "vkubelet-eci");
    this.#signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#pods = new PodTable<PodRecord>({
      statusOf: (record, terminal) =>
        podStatusOf(record, deps.internalIp, deps.clock.now(), terminal),
      log: deps.log,
    });
    this.#supervisor = new GroupSupervisor({
      api,
      records: this.#pods.records,
      nodeName: deps.nodeName,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      event: this.#event,
      recreate: (record, signal) => this.#create(record, signal),
      changed: (record) => this.#pods.notify(record),
    });
    this.#pods.holdUntil(this.#supervisor.adopted);
    this.#running = this.#supervisor.run(this.#signal);
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    // Adopted groups first: a pod that already runs must not get a second group.
    await this.#pods.adopted(options.signal);
    const { namespace, name, uid } = pod.metadata ?? {};
    const k = podKey(namespace, name);
    let record = this.#pods.records.get(k);
    if (record && record.pod.metadata?.uid !== uid) {
      await this.#finish(record, "replaced by a newer pod of the same name", options.signal);
      record = undefined;
    }
    if (record) {
      record.pod = { ...structuredClone(pod), status: record.pod.status };
      if (record.groupId || record.recreateAt !== undefined || record.finished) {
        this.#pods.notify(record);
        return;
      }
    } else {
      checkPod(pod); // refuses before anything is read or written
      record = {
        pod: structuredClone(pod),
        generation: 0,
        restartsBefore: new Map(),
        lastTerminated: new Map(),
        deleting: false,
        startTimeMs: this.#deps.clock.now(),
        seenEvents: new Set(),
      };
    }
    await this.#create(record, options.signal);
    this.#pods.records.set(k, record);
  }

  updatePod(pod: Pod, _options: CallOptions): Promise<void> {
    // A running group's containers cannot change here; labels and annotations are taken over.
    const record = this.#pods.get(pod.metadata?.namespace, pod.metadata?.name);
    if (record && record.pod.metadata?.uid === pod.metadata?.uid) {
      record.pod = { ...structuredClone(pod), status: record.pod.status };
      this.#pods.notify(record);
    }
    return Promise.resolve();
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
        "topology.kubernetes.io/region": this.#config.regionId,
        ...(this.#config.zoneId ? { "topology.kubernetes.io/zone": this.#config.zoneId } : {}),
        "vkubelet.io/provider": "eci",
      },
    }, this.#deps);
  }

  async ping(options: CallOptions): Promise<void> {
    const config = this.#config;
    const endpoint = config.endpoint ?? `https://eci.${config.regionId}.aliyuncs.com`;
    await this.#api.ping(options.signal).catch((err) => {
      throw backendUnreachable(`the ECI API in ${config.regionId} (${endpoint})`, err, {
        reason: "EciUnreachable",
      });
    });
  }

  async getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const record = this.#known(ref.namespace, ref.pod, ref.container);
    if (!record.groupId) {
      throw new NotFoundError(`container ${ref.container} is waiting to start; no log yet`);
    }
    const signal = AbortSignal.any([this.#signal, ...(options.signal ? [options.signal] : [])]);
    return await readContainerLog({
      api: this.#api,
      groupId: record.groupId,
      container: ref.container,
      clock: this.#deps.clock,
      intervalMs: Math.min(this.#config.statusInterval, 2000),
    }, { ...options, signal });
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    const record = this.#known(ref.namespace, ref.pod, ref.container);
    if (!record.groupId) throw new NotFoundError(`container ${ref.container} is not running`);
    const url = await this.#api.exec(record.groupId, ref.container, options.command, {
      stdin: options.io.stdin !== undefined,
      tty: options.io.tty,
      signal: options.signal,
    });
    return await runExecSession(url, options.io, options.signal);
  }

  attachToContainer(ref: ContainerRef): Promise<void> {
    return refuseStreaming(
      "attach",
      "ECI's API has no attach call",
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  portForward(ref: PodRef): Promise<void> {
    return refuseStreaming(
      "portForward",
      "ECI's API has no port-forward call",
      () => this.#known(ref.namespace, ref.name),
    );
  }

  async getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    const running = [...this.#pods.records.values()].filter((r) => r.groupId && !r.finished);
    const pods = [];
    for (const record of running) {
      const samples = await this.#api.metric(record.groupId!, options.signal).catch(() => []);
      pods.push(podStatsOf(record, samples.at(-1)));
    }
    return statsSummary(this.#deps.nodeName, this.#startMs, this.#deps.clock.now(), pods);
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  /** Makes the record's group (its current generation) and follows it. */
  async #create(record: PodRecord, signal?: AbortSignal): Promise<void> {
    const pod = record.pod;
    const kube = this.#deps.kube;
    const volumes = await resolveVolumes(pod, { kube, hostIP: this.#deps.internalIp, signal });
    const credentials = await registryCredentials(pod, kube, signal);
    const plan = groupRequestFor(pod, {
      config: this.#config,
      nodeName: this.#deps.nodeName,
      generation: record.generation,
      volumes,
      credentials,
    });
    const groupId = await this.#api.create(plan.request, signal);
    record.groupId = groupId;
    record.group = undefined;
    record.recreateAt = undefined;
    for (const note of plan.notes) this.#event(pod, "Normal", "EciSized", note);
    this.#pods.notify(record);
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

  /** Deletes the pod's group, reports it terminated and forgets it. */
  async #finish(record: PodRecord, why: string, signal?: AbortSignal): Promise<void> {
    record.deleting = true;
    if (record.groupId) await this.#api.delete(record.groupId, signal);
    record.finished ??= endsNow(
      record,
      `The ECI group was deleted: ${why}`,
      this.#deps.clock.now(),
    );
    record.groupId = undefined;
    this.#pods.notify(record, true);
    this.#pods.forget(record);
  }
}
