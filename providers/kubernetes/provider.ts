/**
 * The kubernetes provider: each pod bound to the virtual node in cluster A runs as one pod in a
 * namespace of cluster B. Creates, updates and deletes follow the upstream pod; B's status comes
 * back through an informer of B and {@link KubernetesProvider.notifyPods}; listPods answers only
 * this node's downstream pods (label `vkubelet.io/virtual-node`), so the core's orphan sweep,
 * which runs after its first full listing of A, deletes exactly the pods whose twin is gone.
 * @module
 */
import type { Node, NodeStatus, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Informer,
  isAlreadyExists,
  isConflict,
  isNotFound as isApiNotFound,
  type KubeClient,
} from "../../k8s/mod.ts";
import {
  type AttachOptions,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  NotFoundError,
  type PodRef,
  type PortForwardOptions,
  type Provider,
  type ProviderDeps,
  type StatsSummary,
  TransientError,
} from "../../lib/provider.ts";
import { freeCapacity, toQuantities } from "./capacity.ts";
import type { KubernetesConfig } from "./config.ts";
import { DependencyMirror } from "./dependencies.ts";
import { downstreamError } from "./errors.ts";
import { downstreamName, MARKS, nodeSelector, upstreamOf } from "./names.ts";
import { goneStatus, upstreamStatus } from "./status.ts";
import { TokenMirror } from "./tokens.ts";
import { translatePod } from "./translate.ts";
import { type CpuCounters, downstreamMetricsText, downstreamStatsSummary } from "./stats.ts";
import { attachDownstream, execDownstream, portForwardDownstream } from "./streaming.ts";

/** The two clusters: A (where the virtual node is) and B (where pods run). */
export interface KubernetesClients {
  upstream: KubeClient;
  downstream: KubeClient;
}

const key = (namespace: string | undefined, name: string | undefined) => `${namespace}/${name}`;

/** Forwards the virtual node's pods to cluster B; see the module doc. */
export class KubernetesProvider implements Provider {
  readonly #config: KubernetesConfig;
  readonly #deps: ProviderDeps;
  readonly #b: KubeClient;
  /** Last pod handed over by the core, by upstream `ns/name`. */
  readonly #upstream = new Map<string, Pod>();
  readonly #deleting = new Set<string>();
  readonly #podCallbacks = new Set<(pod: Pod) => void>();
  readonly #nodeCallbacks = new Set<() => void>();
  readonly #lastNotified = new Map<string, string>();
  readonly #ours: Informer<Pod>;
  readonly #nodes: Informer<Node>;
  readonly #allPods: Informer<Pod>;
  readonly #mirror: DependencyMirror;
  readonly #tokens: TokenMirror;
  readonly #stop = new AbortController();
  /** Held here: a signal from AbortSignal.any must stay referenced while work listens to it. */
  readonly #signal: AbortSignal;
  readonly #running: Promise<void>[] = [];
  readonly #cpuCounters: CpuCounters = new Map();
  #capacity = "";
  #capacityTimer?: ReturnType<typeof setTimeout>;

  constructor(config: KubernetesConfig, deps: ProviderDeps, clients: KubernetesClients) {
    this.#config = config;
    this.#deps = deps;
    this.#b = clients.downstream;
    const signal = this.#signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#ours = this.#b.pods.informer({
      namespace: config.namespace,
      labelSelector: nodeSelector(deps.nodeName),
      name: "downstream pods",
    });
    const selector = Object.entries(config.nodeSelector).map(([k, v]) => `${k}=${v}`).join(",");
    this.#nodes = this.#b.nodes.informer({
      labelSelector: selector || undefined,
      name: "downstream nodes",
    });
    this.#allPods = this.#b.pods.informer({
      fieldSelector: "status.phase!=Succeeded,status.phase!=Failed",
      name: "downstream pods (capacity)",
    });
    this.#mirror = new DependencyMirror({
      upstream: clients.upstream,
      downstream: clients.downstream,
      namespace: config.namespace,
      nodeName: deps.nodeName,
      log: deps.log,
      signal,
    });
    this.#tokens = new TokenMirror({
      upstream: clients.upstream,
      downstream: clients.downstream,
      namespace: config.namespace,
      nodeName: deps.nodeName,
      expirationSeconds: config.tokenExpirationSeconds,
      clock: deps.clock,
      log: deps.log,
      signal,
    });
    this.#ours.on("add", (p) => this.#onDownstream(p));
    this.#ours.on("update", (p) => this.#onDownstream(p));
    this.#ours.on("delete", (p) => this.#onDownstreamGone(p));
    for (const informer of [this.#nodes, this.#allPods] as Informer<Node | Pod>[]) {
      for (const event of ["add", "update", "delete"] as const) {
        informer.on(event, () => this.#capacityChanged());
      }
    }
    for (const informer of [this.#ours, this.#nodes, this.#allPods] as Informer<Node | Pod>[]) {
      this.#running.push(informer.run(signal));
    }
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    const k = key(pod.metadata?.namespace, pod.metadata?.name);
    const translation = translatePod(pod, { config: this.#config, nodeName: this.#deps.nodeName });
    this.#upstream.set(k, structuredClone(pod));
    this.#deleting.delete(k);
    await this.#mirror.track(k, translation.dependencies, options);
    if (translation.tokenSecret) {
      await this.#tokens.start(pod, translation.tokenSecret, options).catch((err) => {
        throw downstreamError("writing the service-account token Secret", err);
      });
    }
    const target = translation.pod;
    try {
      await this.#b.pods.create(this.#config.namespace, target, { signal: options.signal });
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) throw downstreamError(`creating pod ${k}`, err);
    }
    // Already there: ours from an earlier try (done), or an older pod of the same name.
    const existing = await this.#b.pods.get(this.#config.namespace, target.metadata!.name!, {
      signal: options.signal,
    }).catch((err) => {
      throw downstreamError(`reading pod ${k}`, err);
    });
    if (existing.metadata?.labels?.[MARKS.uid] === pod.metadata?.uid) return;
    await this.#b.pods.delete(this.#config.namespace, target.metadata!.name!, {
      gracePeriodSeconds: 0,
      preconditions: { uid: existing.metadata?.uid },
      signal: options.signal,
    }).catch(() => {});
    throw new TransientError(
      `an older downstream pod of ${k} (upstream uid ${
        existing.metadata?.labels?.[MARKS.uid]
      }) is being removed first`,
      { retryAfterMs: 1000 },
    );
  }

  async updatePod(pod: Pod, options: CallOptions): Promise<void> {
    const k = key(pod.metadata?.namespace, pod.metadata?.name);
    const translation = translatePod(pod, { config: this.#config, nodeName: this.#deps.nodeName });
    this.#upstream.set(k, structuredClone(pod));
    const name = translation.pod.metadata!.name!;
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = this.#ours.store.get(this.#config.namespace, name) ??
        await this.#b.pods.get(this.#config.namespace, name, options).catch((err) => {
          throw downstreamError(`reading pod ${k}`, err);
        });
      const next = withMutableFields(current, translation.pod);
      if (JSON.stringify(next) === JSON.stringify(current)) return;
      try {
        await this.#b.pods.update(next, { signal: options.signal });
        return;
      } catch (err) {
        if (!isConflict(err)) throw downstreamError(`updating pod ${k}`, err);
        const fresh = await this.#b.pods.get(this.#config.namespace, name, options);
        if (fresh.metadata?.resourceVersion === current.metadata?.resourceVersion) throw err;
      }
    }
  }

  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    const { namespace, name, uid } = pod.metadata ?? {};
    const k = key(namespace, name);
    this.#deleting.add(k);
    const downstream = this.#ours.store.get(
      this.#config.namespace,
      downstreamName(namespace!, name!),
    );
    if (!downstream || (uid && downstream.metadata?.labels?.[MARKS.uid] !== uid)) {
      this.#finish(k, pod, undefined);
      return;
    }
    try {
      await this.#b.pods.delete(this.#config.namespace, downstream.metadata!.name!, {
        gracePeriodSeconds: pod.metadata?.deletionGracePeriodSeconds ?? 0,
        preconditions: { uid: downstream.metadata?.uid },
        signal: options.signal,
      });
    } catch (err) {
      if (isApiNotFound(err) || isConflict(err)) {
        this.#finish(k, pod, downstream);
        return;
      }
      throw downstreamError(`deleting pod ${k}`, err);
    }
  }

  getPod(namespace: string, name: string, _options: CallOptions): Promise<Pod | undefined> {
    const downstream = this.#ours.store.get(
      this.#config.namespace,
      downstreamName(namespace, name),
    );
    return Promise.resolve(downstream ? this.#toUpstream(downstream) : undefined);
  }

  async listPods(options: CallOptions): Promise<Pod[]> {
    await raceSignal(this.#ours.synced, options.signal);
    return this.#ours.store.list().flatMap((p) => {
      const up = this.#toUpstream(p);
      return up ? [up] : [];
    });
  }

  notifyPods(callback: (pod: Pod) => void): void {
    this.#podCallbacks.add(callback);
  }

  async configureNode(node: Node): Promise<void> {
    // At registration, give B a moment so the first capacity is real rather than zero.
    await raceTimeout(Promise.all([this.#nodes.synced, this.#allPods.synced]), 5_000);
    node.metadata ??= {};
    node.metadata.labels = {
      ...node.metadata.labels,
      "node.kubernetes.io/exclude-from-external-load-balancers": "true",
    };
    node.spec ??= {};
    node.spec.providerID ??=
      `vkubelet-kubernetes://${this.#config.namespace}/${this.#deps.nodeName}`;
    const status: NodeStatus = (node as { status?: NodeStatus }).status ??= {};
    const capacity = this.#currentCapacity();
    status.capacity = { ...capacity };
    status.allocatable = { ...capacity };
    status.addresses = [
      { type: "InternalIP", address: this.#deps.internalIp },
      { type: "Hostname", address: this.#deps.nodeName },
    ];
    status.daemonEndpoints = { kubeletEndpoint: { Port: this.#deps.daemonPort } };
  }

  notifyNodeChanged(callback: () => void): void {
    this.#nodeCallbacks.add(callback);
  }

  async ping(options: CallOptions): Promise<void> {
    const signal = AbortSignal.any([
      AbortSignal.timeout(this.#config.pingTimeout),
      ...(options.signal ? [options.signal] : []),
    ]);
    try {
      await this.#b.request({ path: "/version", signal });
    } catch (err) {
      throw new TransientError(
        `the downstream cluster's apiserver does not answer: ${
          signal.aborted ? `no answer within ${this.#config.pingTimeout} ms` : String(err)
        }`,
        { cause: err },
      );
    }
  }

  async getContainerLogs(
    container: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const name = this.#downstreamPodName(container);
    try {
      return await this.#b.request({
        path: this.#b.pods.path(this.#config.namespace, name, "log"),
        query: {
          container: container.container,
          follow: options.follow || undefined,
          tailLines: options.tailLines,
          timestamps: options.timestamps || undefined,
          sinceSeconds: options.sinceSeconds,
          sinceTime: options.sinceTime?.toISOString(),
          limitBytes: options.limitBytes,
          previous: options.previous || undefined,
        },
        stream: true,
        // Ends follow streams when vkubelet stops, too.
        signal: AbortSignal.any([this.#signal, ...(options.signal ? [options.signal] : [])]),
      });
    } catch (err) {
      throw downstreamError(`reading the log of ${container.namespace}/${container.pod}`, err);
    }
  }

  runInContainer(container: ContainerRef, options: ExecOptions): Promise<number> {
    return execDownstream(this.#b, this.#streamTarget(container), options);
  }

  attachToContainer(container: ContainerRef, options: AttachOptions): Promise<void> {
    return attachDownstream(this.#b, this.#streamTarget(container), options);
  }

  portForward(pod: PodRef, options: PortForwardOptions): Promise<void> {
    return portForwardDownstream(this.#b, {
      namespace: this.#config.namespace,
      pod: this.#downstreamPodName(pod.namespace, pod.name),
    }, options);
  }

  getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    return downstreamStatsSummary(this.#b, {
      nodeName: this.#deps.nodeName,
      namespace: this.#config.namespace,
      pods: this.#ours.store.list(),
      toUpstream: (p) => upstreamOf(p.metadata),
      counters: this.#cpuCounters,
      nowMs: this.#deps.clock.now(),
      signal: options.signal,
    });
  }

  getMetricsResource(options: CallOptions): Promise<string> {
    return downstreamMetricsText(this.#b, {
      nodeName: this.#deps.nodeName,
      namespace: this.#config.namespace,
      pods: this.#ours.store.list(),
      toUpstream: (p) => upstreamOf(p.metadata),
      counters: this.#cpuCounters,
      nowMs: this.#deps.clock.now(),
      signal: options.signal,
    });
  }

  async close(): Promise<void> {
    this.#stop.abort();
    clearTimeout(this.#capacityTimer);
    this.#tokens.close();
    await Promise.allSettled(this.#running);
    await this.#mirror.close();
    this.#b.close();
  }

  #downstreamPodName(ref: ContainerRef | string, name?: string): string {
    const [namespace, pod] = typeof ref === "string" ? [ref, name!] : [ref.namespace, ref.pod];
    const downstream = this.#ours.store.get(this.#config.namespace, downstreamName(namespace, pod));
    if (!downstream) {
      throw new NotFoundError(`pod ${namespace}/${pod} does not run in the downstream cluster`);
    }
    return downstream.metadata!.name!;
  }

  #streamTarget(container: ContainerRef) {
    return {
      namespace: this.#config.namespace,
      pod: this.#downstreamPodName(container),
      container: container.container,
    };
  }

  /** The upstream pod a downstream one stands for, with B's status. */
  #toUpstream(downstream: Pod): Pod | undefined {
    const up = upstreamOf(downstream.metadata);
    if (!up) return undefined;
    const record = this.#upstream.get(key(up.namespace, up.name));
    const sameUid = record?.metadata?.uid === up.uid;
    const metadata = sameUid
      ? structuredClone(record!.metadata)
      : { namespace: up.namespace, name: up.name, uid: up.uid };
    return {
      apiVersion: "v1",
      kind: "Pod",
      metadata,
      spec: sameUid ? structuredClone(record!.spec) : undefined,
      status: upstreamStatus(downstream, this.#deps.internalIp),
    };
  }

  #onDownstream(downstream: Pod): void {
    const pod = this.#toUpstream(downstream);
    if (pod) this.#notify(pod);
  }

  #onDownstreamGone(downstream: Pod): void {
    const up = upstreamOf(downstream.metadata);
    if (!up) return;
    const k = key(up.namespace, up.name);
    const record = this.#upstream.get(k);
    if (record && record.metadata?.uid !== up.uid) return; // an older twin we replaced
    this.#finish(k, record ?? { metadata: up }, downstream);
  }

  /** The pod has left B: report every container terminated, release what it held. */
  #finish(k: string, pod: Pod, downstream: Pod | undefined): void {
    const deleting = this.#deleting.has(k);
    const last = downstream ? upstreamStatus(downstream, this.#deps.internalIp) : pod.status;
    const status = goneStatus(last, {
      deleting,
      reason: deleting ? "Terminated" : "DownstreamPodDeleted",
      message: deleting
        ? "The pod was deleted in the downstream cluster"
        : "The pod's twin in the downstream cluster was deleted there",
      nowIso: new Date(this.#deps.clock.now()).toISOString().replace(/\.\d+Z$/, "Z"),
    });
    const record = this.#upstream.get(k);
    this.#notify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: structuredClone(record?.metadata ?? pod.metadata),
      spec: record?.spec,
      status,
    });
    this.#mirror.untrack(k);
    const translationName = downstreamName(pod.metadata!.namespace!, `${pod.metadata!.name}.token`);
    if (this.#config.serviceAccountToken === "upstream") {
      void this.#tokens.stop(pod, translationName);
    }
    this.#upstream.delete(k);
    this.#deleting.delete(k);
    this.#lastNotified.delete(k);
  }

  #notify(pod: Pod): void {
    const k = key(pod.metadata?.namespace, pod.metadata?.name);
    const text = JSON.stringify([pod.metadata?.uid, pod.status]);
    if (this.#lastNotified.get(k) === text) return;
    this.#lastNotified.set(k, text);
    for (const callback of this.#podCallbacks) {
      try {
        callback(structuredClone(pod));
      } catch (err) {
        this.#deps.log.error("pod status callback threw: {err}", { err: String(err) });
      }
    }
  }

  #currentCapacity(): Record<string, string> {
    const ourLabel = nodeSelector(this.#deps.nodeName).split("=")[1];
    const free = freeCapacity(
      this.#nodes.store.list(),
      this.#allPods.store.list(),
      (p) => p.metadata?.labels?.[MARKS.node] !== ourLabel,
    );
    return toQuantities(free);
  }

  #capacityChanged(): void {
    if (this.#capacityTimer !== undefined) return;
    // Debounced: a burst of pod events in B becomes one node update.
    this.#capacityTimer = setTimeout(() => {
      this.#capacityTimer = undefined;
      const next = JSON.stringify(this.#currentCapacity());
      if (next === this.#capacity) return;
      this.#capacity = next;
      for (const callback of this.#nodeCallbacks) callback();
    }, 1_000);
  }
}

/** `current` with the fields of `wanted` that a running pod may change. */
function withMutableFields(current: Pod, wanted: Pod): Pod {
  const next = structuredClone(current);
  next.metadata!.labels = { ...wanted.metadata?.labels };
  next.metadata!.annotations = { ...wanted.metadata?.annotations };
  const images = new Map(
    [...wanted.spec?.containers ?? [], ...wanted.spec?.initContainers ?? []].map((
      c,
    ) => [c.name, c.image]),
  );
  for (const c of [...next.spec?.containers ?? [], ...next.spec?.initContainers ?? []]) {
    const image = images.get(c.name);
    if (image) c.image = image;
  }
  if (wanted.spec?.activeDeadlineSeconds !== undefined) {
    next.spec!.activeDeadlineSeconds = wanted.spec.activeDeadlineSeconds;
  }
  return next;
}

function raceSignal<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    }),
  ]);
}

async function raceTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise<void>((resolve) => timer = setTimeout(resolve, ms)),
  ]);
  clearTimeout(timer);
}
