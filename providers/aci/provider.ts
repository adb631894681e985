/**
 * The aci provider: each pod bound to the virtual node runs as one Azure Container Instances
 * container group, named from node, namespace and pod and tagged with them. One loop reads the
 * groups (`statusInterval`) and pushes status through {@link notifyPods}; ACI itself restarts
 * containers by the group's restart policy. On start it adopts this node's groups (by tag), so a
 * restarted vkubelet never runs a pod twice; groups of pods the API no longer has are listed,
 * and the core deletes them once its caches synced.
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
  NotSupportedError,
  type PodRef,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { AciConfig } from "./config.ts";
import { containerGroupFor } from "./container_group.ts";
import { type PodEventSink, podEventSink, podKey, PodTable } from "../../provider/mod.ts";
import { execInContainer } from "./exec.ts";
import type { AciGroups } from "./groups.ts";
import { readContainerLog } from "./logs.ts";
import { groupName } from "./names.ts";
import { NodeCapacity } from "./capacity.ts";
import { endsOf, type PodRecord, podStatusOf } from "./status.ts";
import { GroupSupervisor } from "./supervisor.ts";
import { podVolumes, registryCredentials } from "./volumes.ts";

/** Runs the virtual node's pods as ACI container groups; see the module doc. */
export class AciProvider implements Provider {
  readonly #config: AciConfig;
  readonly #deps: ProviderDeps;
  readonly #groups: AciGroups;
  readonly #pods: PodTable<PodRecord>;
  readonly #event: PodEventSink;
  readonly #supervisor: GroupSupervisor;
  readonly #capacity: NodeCapacity;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #running: Promise<void>;
  /** Secret-sourced env values come marked, and go to ACI as `secureValue`. */
  readonly secretEnvRefs = true;

  readonly #kubeProxyKubeconfig?: string;

  constructor(
    config: AciConfig,
    deps: ProviderDeps,
    groups: AciGroups,
    options: { kubeProxyKubeconfig?: string } = {},
  ) {
    this.#config = config;
    this.#kubeProxyKubeconfig = options.kubeProxyKubeconfig;
    this.#deps = deps;
    this.#groups = groups;
    this.#event = podEventSink(deps, "vkubelet-aci");
    this.#signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#capacity = new NodeCapacity({ config, groups, log: deps.log });
    this.#pods = new PodTable<PodRecord>({
      statusOf: (record, terminal) =>
        podStatusOf(record, deps.internalIp, deps.clock.now(), terminal),
      log: deps.log,
    });
    this.#supervisor = new GroupSupervisor({
      groups,
      records: this.#pods.records,
      nodeName: deps.nodeName,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      event: this.#event,
      recreate: (record, signal) => this.#recreate(record, signal),
      changed: (record) => this.#pods.notify(record),
    });
    this.#pods.holdUntil(this.#supervisor.adopted);
    this.#running = Promise.all([
      this.#supervisor.run(this.#signal),
      this.#capacity.check(this.#signal),
    ]).then(() => {});
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    // Adopted groups first: a pod that already runs must not get a second group.
    await this.#pods.adopted(options.signal);
    const { namespace = "", name = "", uid } = pod.metadata ?? {};
    const k = podKey(namespace, name);
    let record = this.#pods.records.get(k);
    if (record && record.pod.metadata?.uid !== uid) {
      // An older pod of the same name: its group must not stand for this one.
      await this.#finish(record, "replaced by a newer pod of the same name", options.signal);
      record = undefined;
    }
    if (record) {
      record.pod = structuredClone(pod);
      this.#pods.notify(record);
      return;
    }
    record = {
      pod: structuredClone(pod),
      groupName: groupName(this.#deps.nodeName, namespace, name),
      restartOffset: 0,
      lastTerminated: new Map(),
      deleting: false,
      startTimeMs: this.#deps.clock.now(),
      seenEvents: new Set(),
    };
    await this.#makeGroup(record, options.signal);
    this.#pods.records.set(k, record);
    this.#pods.notify(record);
  }

  updatePod(pod: Pod, _options: CallOptions): Promise<void> {
    // A group's containers cannot change in place; labels and annotations are taken over.
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
      capacity: this.#capacity.capacity(),
      labels: {
        "kubernetes.io/os": this.#config.osType.toLowerCase(),
        "topology.kubernetes.io/region": this.#config.location,
        "vkubelet.io/provider": "aci",
      },
    }, this.#deps);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#capacity.onChange(callback);
  }

  /** ARM answers for the resource group: the node is reachable (see `core/node/outage.ts`). */
  async ping(options: CallOptions): Promise<void> {
    const config = this.#config;
    await this.#groups.ping(options.signal).catch((err) => {
      throw backendUnreachable(
        `Azure Container Instances (${config.endpoint}, resource group ${config.resourceGroup})`,
        err,
        {
          reason: "AciUnreachable",
          hint: "check the network, the credentials and the resource group",
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
      const signal = AbortSignal.any([this.#signal, ...(options.signal ? [options.signal] : [])]);
      return readContainerLog({
        groups: this.#groups,
        group: record.groupName,
        container: ref.container,
        clock: this.#deps.clock,
        pollMs: Math.min(this.#config.statusInterval, 2000),
      }, { ...options, signal });
    });
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    const record = this.#known(ref.namespace, ref.pod, ref.container);
    return await execInContainer({
      groups: this.#groups,
      group: record.groupName,
      container: ref.container,
      command: options.command,
      io: options.io,
      signal: options.signal,
    });
  }

  attachToContainer(ref: ContainerRef): Promise<void> {
    return refuseStreaming(
      "attach",
      NO_ACI_CHANNEL,
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  portForward(ref: PodRef): Promise<void> {
    return refuseStreaming(
      "portForward",
      NO_ACI_CHANNEL,
      () => this.#known(ref.namespace, ref.name),
    );
  }

  /**
   * 501 naming the reason: ACI's API (Microsoft.ContainerInstance 2023-05-01) reports no CPU or
   * memory use — that is Azure Monitor's metrics API (Microsoft.Insights), whose description is
   * not in the set vkubelet is checked against — and a summary without figures would let
   * metrics-server report pods as using nothing.
   */
  getStatsSummary(_options: CallOptions): Promise<StatsSummary> {
    return Promise.reject(new NotSupportedError(NO_ACI_USAGE));
  }

  /** 501 naming the reason, as {@link getStatsSummary}. */
  getMetricsResource(_options: CallOptions): Promise<string> {
    return Promise.reject(new NotSupportedError(NO_ACI_USAGE));
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  /** Reads what the pod's volumes and pull secrets name, and PUTs its group. */
  async #makeGroup(record: PodRecord, signal?: AbortSignal): Promise<void> {
    const { pod } = record;
    const sources = { kube: this.#deps.kube, signal };
    const inputs = {
      nodeName: this.#deps.nodeName,
      restarts: record.restartOffset,
      limits: this.#capacity.groupLimits(),
      // Names only, for the check before anything is read.
      volumes: (pod.spec?.volumes ?? []).map((v) => ({ name: v.name })) as Awaited<
        ReturnType<typeof podVolumes>
      >,
      credentials: [] as Awaited<ReturnType<typeof registryCredentials>>,
      kubeProxyKubeconfig: this.#kubeProxyKubeconfig,
    };
    containerGroupFor(pod, this.#config, inputs); // refuses before any read or write
    inputs.volumes = await podVolumes(pod, sources);
    inputs.credentials = await registryCredentials(pod, sources);
    const body = containerGroupFor(pod, this.#config, inputs);
    this.#deps.fence?.check(`creating container group ${record.groupName}`);
    record.group = await this.#groups.create(record.groupName, body, signal);
  }

  /** The group was deleted behind our back and the restart policy wants it again. */
  async #recreate(record: PodRecord, signal: AbortSignal): Promise<void> {
    await this.#makeGroup(record, signal);
    record.recreateAt = undefined;
    this.#event(record.pod, "Normal", "ContainerGroupCreated", `made ${record.groupName} again`);
    this.#pods.notify(record);
  }

  /** The record of a pod (and container) on this node, or {@link NotFoundError}. */
  #known(namespace: string, pod: string, container?: string): PodRecord {
    const record = this.#pods.get(namespace, pod);
    if (!record) throw new NotFoundError(`pod ${namespace}/${pod} is not on this node`);
    const names = [
      ...(record.pod.spec?.containers ?? []),
      ...(record.pod.spec?.initContainers ?? []),
    ]
      .map((c) => c.name);
    if (container !== undefined && !names.includes(container)) {
      throw new NotFoundError(`pod ${namespace}/${pod} has no container ${container}`);
    }
    return record;
  }

  /** Deletes the pod's group, reports it terminated and forgets it. */
  async #finish(record: PodRecord, why: string, signal?: AbortSignal): Promise<void> {
    record.deleting = true;
    this.#deps.fence?.check(`deleting container group ${record.groupName}`);
    await this.#groups.delete(record.groupName, signal);
    // Every container ends terminated (the contract of deletePod).
    record.finished ??= endsOf(
      record,
      `container group ${record.groupName} deleted: ${why}`,
      this.#deps.clock.now(),
      "Error",
    );
    this.#pods.notify(record, true);
    this.#pods.forget(record);
  }
}

/** `work()` as a promise: its value, or its exception as a rejection. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Why /stats/summary and /metrics/resource answer 501. */
const NO_ACI_USAGE =
  "ACI's container API (Microsoft.ContainerInstance 2023-05-01) reports no CPU or memory use; the figures are in Azure Monitor's metrics API (Microsoft.Insights), which the aci provider does not read";

/** Why attach and port-forward are refused. */
const NO_ACI_CHANNEL = "ACI offers no such channel that vkubelet can use";
