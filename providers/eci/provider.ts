/**
 * The eci provider: each pod bound to the virtual node runs as one ECI container group, made
 * with CreateContainerGroup (a `ClientToken` per pod and run, so a retried create makes one
 * group). The kit's RemotePods owns the pod's life — it adopts this node's groups by tag on start
 * (so a restarted vkubelet never runs a pod twice), polls DescribeContainerGroups in batches
 * every `statusInterval`, makes a group deleted behind vkubelet's back again by the restart
 * policy after the kubelet's back-off, and pushes status through {@link notifyPods} — on the ECI
 * backend in `./backend.ts`. This file adds exec, stats and the node.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  backendUnreachable,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  LegacyRemotePodsProvider as RemotePodsProvider,
  NotFoundError,
  podEventSink,
  type PodRef,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
  RemotePods,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { ContainerGroup, EciApi } from "./api.ts";
import { EciBackend } from "./backend.ts";
import type { EciConfig } from "./config.ts";
import { runExecSession } from "./exec.ts";
import { podStatsOf, statsSummary } from "./stats.ts";

/** Runs the virtual node's pods as ECI container groups; see the module doc. */
export class EciProvider extends RemotePodsProvider<ContainerGroup> implements Provider {
  readonly #config: EciConfig;
  readonly #deps: ProviderDeps;
  readonly #api: EciApi;
  protected readonly pods: RemotePods<ContainerGroup>;
  readonly #stop = new AbortController();
  readonly #running: Promise<void>;
  readonly #startMs: number;
  /** ECI sets `status.podIP` in env itself (`FieldRef.FieldPath`), once the group has its IP. */
  readonly deferredFieldPaths = ["status.podIP"] as const;

  constructor(config: EciConfig, deps: ProviderDeps, api: EciApi) {
    super();
    this.#config = config;
    this.#deps = deps;
    this.#api = api;
    this.#startMs = deps.clock.now();
    const signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    const backend = new EciBackend({
      api,
      config,
      nodeName: deps.nodeName,
      hostIP: deps.internalIp,
      clock: deps.clock,
      log: deps.log,
      event: podEventSink(deps, "vkubelet-eci"),
      kube: deps.kube,
      signal,
    });
    this.pods = new RemotePods({
      backend,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      hostIP: deps.internalIp,
      // ECI restarts a group's containers itself; the kit makes again only a group that is gone.
      backendRestarts: true,
      // A deletion seen before the groups are adopted would leave its group running.
      retryList: true,
      keepPodIP: true,
    });
    this.#running = this.pods.run(signal);
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

  /** Through DescribeContainerLog, from the pod's current group. */
  getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return this.pods.getContainerLogs(ref, options);
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    this.pods.knownPod(ref.namespace, ref.pod, ref.container);
    const groupId = this.pods.runOf(ref.namespace, ref.pod)?.handle?.containerGroupId;
    if (!groupId) throw new NotFoundError(`container ${ref.container} is not running`);
    const url = await this.#api.exec(groupId, ref.container, options.command, {
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
      () => this.pods.knownPod(ref.namespace, ref.pod, ref.container),
    );
  }

  portForward(ref: PodRef): Promise<void> {
    return refuseStreaming(
      "portForward",
      "ECI's API has no port-forward call",
      () => this.pods.knownPod(ref.namespace, ref.name),
    );
  }

  /** Each running group's newest DescribeContainerGroupMetric sample; the node is their sum. */
  async getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    const pods = [];
    for (const { pod, run, startTimeMs } of this.pods.running()) {
      const id = run.handle?.containerGroupId;
      if (!id) continue;
      const samples = await this.#api.metric(id, options.signal).catch(() => []);
      pods.push(podStatsOf(pod, startTimeMs, samples.at(-1)));
    }
    return statsSummary(this.#deps.nodeName, this.#startMs, this.#deps.clock.now(), pods);
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }
}
