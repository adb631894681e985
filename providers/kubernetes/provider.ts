/**
 * The kubernetes provider: each pod bound to the virtual node in cluster A runs as one pod in a
 * namespace of cluster B. Creates, updates and deletes follow the upstream pod; B's status comes
 * back through an informer of B and {@link KubernetesProvider.notifyPods}; listPods answers only
 * this node's downstream pods (label `vkubelet.io/virtual-node`), so the core's orphan sweep,
 * which runs after its first full listing of A, deletes exactly the pods whose twin is gone.
 * The node side is in `./node/downstream_node.ts`, the status push in `./status/status_relay.ts`.
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Informer,
  isAlreadyExists,
  isConflict,
  isKubeNotFound,
  type KubeClient,
} from "../../k8s/mod.ts";
import {
  type AttachOptions,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  InvalidInputError,
  type PodRef,
  type PortForwardOptions,
  type Provider,
  type ProviderDeps,
  type ProviderKubeClient,
  type StatsSummary,
  TransientError,
} from "../../provider/mod.ts";
import { CciNamespaceCheck, recordShaping } from "./cci/cci_namespace.ts";
import { type ClaimCopies, claimCopiesFor } from "./copies/claims.ts";
import type { KubernetesConfig } from "./config.ts";
import { DependencyMirror } from "./copies/dependencies.ts";
import { EventRelay } from "./status/event_relay.ts";
import { UnschedulableWatch } from "./status/unschedulable.ts";
import { DownstreamNode } from "./node/downstream_node.ts";
import { downstreamError } from "./errors.ts";
import { MARKS, nodeSelector, upstreamOf } from "./names.ts";
import { Placement } from "./placement.ts";
import { ServiceMirror } from "./copies/services.ts";
import { StatusRelay } from "./status/status_relay.ts";
import { TokenMirror } from "./copies/tokens.ts";
import { DEFERRED_FIELD_PATHS, translatePod } from "./translate/translate.ts";
import { DownstreamAccess } from "./streaming/access.ts";
import { withMutableFields } from "./_private.ts";
import { GatewayNetwork } from "./network/gateway_network.ts";
import { podKey, raceSignal } from "../../provider/mod.ts";

/** The two clusters: A (where the virtual node is, vkubelet's client) and B (where pods run). */
export interface KubernetesClients {
  upstream: ProviderKubeClient;
  downstream: KubeClient;
}

/** Forwards the virtual node's pods to cluster B; see the module doc. */
export class KubernetesProvider implements Provider {
  /** The pods live in cluster B, so replicas of the node can take turns (`--leader-elect`). */
  readonly highAvailability = true;
  readonly #config: KubernetesConfig;
  readonly #deps: ProviderDeps;
  readonly #b: KubeClient;
  readonly #ours: Informer<Pod>;
  readonly #node: DownstreamNode;
  readonly #relay: StatusRelay;
  readonly #mirror: DependencyMirror;
  readonly #tokens: TokenMirror;
  readonly #unschedulable: UnschedulableWatch;
  readonly #place: Placement;
  readonly #services?: ServiceMirror;
  /** `gateway`: the pods' IPs in A through the gateway in B, and A's Services reflected. */
  readonly #network?: GatewayNetwork;
  /** `gateway`: the first list's pods were handed to the gateway (reattached, the rest let go). */
  #adopted = false;
  /** `persistentVolumeClaims: copy`: the claims' copies in B (and A's binding). */
  readonly #claims?: ClaimCopies;
  /** The virtual node's `kubernetes.io/hostname` label, once the node is configured. */
  #hostname?: string;
  readonly #stop = new AbortController();
  /** Held here: a signal from AbortSignal.any must stay referenced while work listens to it. */
  readonly #signal: AbortSignal;
  readonly #running: Promise<void>[] = [];
  /** `profile: cci`: B's namespace checked before the first pod. */
  readonly #cci?: CciNamespaceCheck;
  /** `--leader-elect`: this replica does not lead, so it keeps nothing in B current. */
  #standingBy = false;
  readonly #access: DownstreamAccess;
  /** B assigns the pod and host IPs: env fieldRefs to them are resolved by B's kubelet. */
  readonly deferredFieldPaths = DEFERRED_FIELD_PATHS;

  constructor(config: KubernetesConfig, deps: ProviderDeps, clients: KubernetesClients) {
    this.#config = config;
    this.#deps = deps;
    this.#b = clients.downstream;
    if (config.profile === "cci" && config.namespace) {
      this.#cci = new CciNamespaceCheck(this.#b, config.namespace);
    }
    const signal = this.#signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    const place = this.#place = new Placement(config, deps.nodeName);
    this.#ours = this.#b.pods.informer({
      namespace: place.watched,
      labelSelector: nodeSelector(deps.nodeName),
      name: "downstream pods",
    });
    this.#node = new DownstreamNode({
      config,
      downstream: clients.downstream,
      nodeName: deps.nodeName,
      internalIp: deps.internalIp,
      daemonPort: deps.daemonPort,
    });
    this.#mirror = new DependencyMirror({
      upstream: clients.upstream,
      downstream: clients.downstream,
      placement: place,
      nodeName: deps.nodeName,
      log: deps.log,
      signal,
    });
    this.#tokens = new TokenMirror({
      upstream: clients.upstream,
      downstream: clients.downstream,
      placement: place,
      nodeName: deps.nodeName,
      expirationSeconds: config.tokenExpirationSeconds,
      clock: deps.clock,
      log: deps.log,
      signal,
    });
    const { gateway } = config;
    if (gateway && deps.podNetwork?.gateway) {
      this.#network = new GatewayNetwork({
        config: { ...config, gateway },
        downstream: clients.downstream,
        podNetwork: { gateway: deps.podNetwork.gateway.bind(deps.podNetwork) },
        nodeName: deps.nodeName,
        clock: deps.clock,
        log: deps.log,
        onAttached: (k) => this.#reportAgain(k),
      });
      this.#running.push(this.#network.run(signal));
    }
    if ((config.syncServices || this.#network) && clients.upstream.services) {
      this.#services = new ServiceMirror({
        upstream: clients.upstream.services,
        downstream: clients.downstream,
        nodeName: deps.nodeName,
        log: deps.log,
        signal,
        writer: this.#network?.reflection,
      });
    }
    this.#claims = claimCopiesFor(config, {
      upstream: clients.upstream,
      downstream: clients.downstream,
      placement: place,
      nodeName: deps.nodeName,
      hostname: () => this.#hostname ?? deps.nodeName,
      leading: () => !this.#standingBy,
      onNamespaceEmptied: (namespace) => void this.#removeNamespaceIfUnused(namespace),
      clock: deps.clock,
      log: deps.log,
      signal,
    });
    if (this.#claims) this.#running.push(this.#claims.run(signal));
    this.#access = new DownstreamAccess({
      downstream: clients.downstream,
      nodeName: deps.nodeName,
      namespace: place.watched,
      clock: deps.clock,
      signal,
      pods: () => this.#ours.store.list(),
      find: (namespace, name) => this.#downstreamOf(namespace, name),
    });
    this.#relay = new StatusRelay({
      internalIp: deps.internalIp,
      clock: deps.clock,
      log: deps.log,
      release: (k, pod) => this.#release(k, pod),
      podAddress: this.#network ? (k) => this.#network!.addresses.of(k) : undefined,
    });
    this.#unschedulable = new UnschedulableWatch({
      timeoutMs: config.unschedulableTimeout,
      clock: deps.clock,
      fail: (p, message) => this.#failUnschedulable(p, message),
      active: () => !this.#standingBy,
    });
    for (const event of ["add", "update"] as const) {
      this.#ours.on(event, (p: Pod) => {
        this.#tellRemoteAddress(p);
        this.#relay.onDownstream(p);
        this.#unschedulable.observe(p);
      });
    }
    this.#ours.on("delete", (p) => {
      this.#unschedulable.forget(p);
      this.#relay.onDownstreamGone(p);
    });
    this.#running.push(
      this.#ours.run(signal),
      this.#node.run(signal),
      this.#unschedulable.run(signal),
    );
    if (clients.upstream.events) {
      const events = new EventRelay({
        downstream: clients.downstream,
        upstream: clients.upstream.events,
        namespace: place.watched,
        nodeName: deps.nodeName,
        log: deps.log,
        downstreamPod: (namespace, name) => this.#ours.store.get(namespace, name),
      });
      this.#running.push(events.run(signal));
    }
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    const k = podKey(pod.metadata?.namespace, pod.metadata?.name);
    const translation = this.#translate(pod);
    // Admission, as a kubelet's (pkg/kubelet/lifecycle/predicate.go): one node of B must fit.
    const fit = await this.#node.fit(translation.pod, options);
    if (!fit.ok) throw new InvalidInputError(`Pod was rejected: ${fit.message}`);
    await this.#cci?.check(options);
    this.#relay.remember(k, pod);
    this.#relay.setDeleting(k, false);
    const where = translation.pod.metadata!.namespace!;
    await this.#place.ensure(this.#b, where, options).catch((err) => {
      throw downstreamError(`creating namespace ${where}`, err);
    });
    await this.#mirror.track(k, translation.dependencies, options);
    if (translation.tokenSecret) {
      await this.#tokens.start(pod, translation.tokenSecret, options).catch((err) => {
        throw downstreamError("writing the service-account token Secret", err);
      });
    }
    await this.#claims?.ensure(pod, translation.claims, options);
    // Copied before the pod starts: B's kubelet sets service links from what exists then.
    await this.#services?.track(k, pod.metadata!.namespace!, options.signal);
    this.#sweepReflections(pod.metadata!.namespace!);
    const target = this.#services ? this.#translate(pod).pod : translation.pod;
    // Its IP in A first: the gateway must know the pod before B reports it running.
    await this.#network?.addresses.attach(k, pod, options.signal);
    try {
      await this.#b.pods.create(where, target, { signal: options.signal });
      await recordShaping(this.#deps.kube, pod, translation.shaped ?? [], {
        nodeName: this.#deps.nodeName,
        nowMs: this.#deps.clock.now(),
        signal: options.signal,
      });
      return;
    } catch (err) {
      if (isKubeNotFound(err)) this.#place.forget(where); // the namespace went away
      if (!isAlreadyExists(err)) throw downstreamError(`creating pod ${k}`, err);
    }
    // Already there: ours from an earlier try (done), or an older pod of the same name.
    const existing = await this.#b.pods.get(where, target.metadata!.name!, {
      signal: options.signal,
    }).catch((err) => {
      throw downstreamError(`reading pod ${k}`, err);
    });
    if (existing.metadata?.labels?.[MARKS.uid] === pod.metadata?.uid) return;
    await this.#b.pods.delete(where, target.metadata!.name!, {
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
    const k = podKey(pod.metadata?.namespace, pod.metadata?.name);
    const translation = this.#translate(pod);
    this.#relay.remember(k, pod);
    // After a restart the core reaches the pods already in B through here, not createPod: the
    // per-name watches and the token renewal must start again (issue 24).
    await this.#mirror.track(k, translation.dependencies, options);
    await this.#services?.track(k, pod.metadata!.namespace!, options.signal);
    this.#sweepReflections(pod.metadata!.namespace!);
    await this.#network?.addresses.ensure(k, pod, options.signal);
    if (translation.tokenSecret && !this.#tokens.renews(k)) {
      await this.#tokens.start(pod, translation.tokenSecret, options).catch((err) => {
        throw downstreamError("writing the service-account token Secret", err);
      });
    }
    const { name, namespace: where } = translation.pod.metadata as {
      name: string;
      namespace: string;
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = this.#ours.store.get(where, name) ??
        await this.#b.pods.get(where, name, options).catch((err) => {
          throw downstreamError(`reading pod ${k}`, err);
        });
      const next = withMutableFields(current, translation.pod);
      if (JSON.stringify(next) === JSON.stringify(current)) return;
      try {
        await this.#b.pods.update(next, { signal: options.signal });
        return;
      } catch (err) {
        if (!isConflict(err)) throw downstreamError(`updating pod ${k}`, err);
        const fresh = await this.#b.pods.get(where, name, options);
        if (fresh.metadata?.resourceVersion === current.metadata?.resourceVersion) throw err;
      }
    }
  }

  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    // The downstream pods first: a deletion seen before the cache synced must still find its pod.
    await raceSignal(this.#ours.synced, options.signal);
    const { namespace, name, uid } = pod.metadata ?? {};
    const k = podKey(namespace, name);
    this.#relay.setDeleting(k, true);
    const downstream = this.#downstreamOf(namespace!, name!);
    if (!downstream || (uid && downstream.metadata?.labels?.[MARKS.uid] !== uid)) {
      this.#relay.finish(k, pod, undefined);
      return;
    }
    try {
      await this.#b.pods.delete(downstream.metadata!.namespace!, downstream.metadata!.name!, {
        gracePeriodSeconds: pod.metadata?.deletionGracePeriodSeconds ?? 0,
        preconditions: { uid: downstream.metadata?.uid },
        signal: options.signal,
      });
    } catch (err) {
      if (isKubeNotFound(err) || isConflict(err)) {
        this.#relay.finish(k, pod, downstream);
        return;
      }
      throw downstreamError(`deleting pod ${k}`, err);
    }
  }

  getPod(namespace: string, name: string, _options: CallOptions): Promise<Pod | undefined> {
    const downstream = this.#downstreamOf(namespace, name);
    return Promise.resolve(downstream ? this.#relay.toUpstream(downstream) : undefined);
  }

  async listPods(options: CallOptions): Promise<Pod[]> {
    await raceSignal(this.#ours.synced, options.signal);
    const pods = this.#ours.store.list().flatMap((p) => {
      const up = this.#relay.toUpstream(p);
      return up ? [up] : [];
    });
    if (this.#network && !this.#adopted) {
      // In the background: the gateway may still be on its way into B.
      this.#adopted = true;
      const byKey = new Map(pods.map((p) => [podKey(p.metadata?.namespace, p.metadata?.name), p]));
      this.#network.addresses.adopt(byKey, this.#signal).catch((err) => {
        this.#adopted = false;
        if (this.#signal.aborted) return;
        this.#deps.log.warn("could not hand B's pods to the gateway: {err}", { err: String(err) });
      });
    }
    return pods;
  }

  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.#relay.notifyPods(callback);
  }

  configureNode(node: Node): Promise<void> {
    this.#hostname = node.metadata?.labels?.["kubernetes.io/hostname"] ?? this.#hostname;
    return this.#node.configureNode(node);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#node.notifyNodeChanged(callback);
  }

  ping(options: CallOptions): Promise<void> {
    return this.#node.ping(options);
  }

  getContainerLogs(
    container: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return this.#access.logs(container, options);
  }

  runInContainer(container: ContainerRef, options: ExecOptions): Promise<number> {
    return this.#access.exec(container, options);
  }

  attachToContainer(container: ContainerRef, options: AttachOptions): Promise<void> {
    return this.#access.attach(container, options);
  }

  portForward(pod: PodRef, options: PortForwardOptions): Promise<void> {
    return this.#access.portForward(pod, options);
  }

  getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    return this.#access.statsSummary(options);
  }

  getMetricsResource(options: CallOptions): Promise<string> {
    return this.#access.metrics(options);
  }

  /**
   * `--leader-elect`: a new term. The core adopts pods that run in B without a createPod, so
   * their ConfigMap and Secret copies and token renewals start here (once per term).
   */
  resume(pods: readonly Pod[]): void {
    this.#standingBy = false;
    this.#claims?.resume();
    for (const pod of pods) {
      const { namespace, name, uid } = pod.metadata ?? {};
      if (!namespace || !name || pod.metadata?.deletionTimestamp) continue;
      const twin = this.#ours.store.get(
        this.#place.namespaceOf(namespace),
        this.#place.nameOf(namespace, name),
      );
      if (twin?.metadata?.labels?.[MARKS.uid] !== uid) continue; // createPod will do it.
      const k = podKey(namespace, name);
      try {
        const t = this.#translate(pod);
        void this.#mirror.track(k, t.dependencies).catch(() => {});
        void this.#services?.track(k, namespace).catch(() => {});
        void this.#network?.addresses.ensure(k, pod).catch(() => {});
        if (t.tokenSecret) {
          this.#tokens.start(pod, t.tokenSecret).catch((err) =>
            this.#deps.log.warn("could not renew the token of {pod}: {err}", {
              pod: k,
              err: String(err),
            })
          );
        }
      } catch (err) {
        this.#deps.log.warn("not keeping the copies for {pod} current: {err}", {
          pod: k,
          err: String(err),
        });
      }
    }
  }

  /**
   * `--leader-elect`: the term ended. Stop mirroring ConfigMaps, Secrets and Services and
   * renewing tokens into B (the copies and token Secrets stay: the pods still use them, and the
   * new leader keeps them current), fail no unschedulable pod, and delete nothing there when a
   * pod leaves B. B's client refuses writes besides (`ProviderDeps.fence`).
   */
  standby(): void {
    this.#standingBy = true;
    this.#mirror.standby();
    this.#services?.standby();
    this.#tokens.close();
  }

  async close(): Promise<void> {
    this.#stop.abort();
    this.#node.close();
    this.#tokens.close();
    await Promise.allSettled(this.#running);
    await this.#mirror.close();
    await this.#services?.close();
    this.#b.close();
  }

  #translate(pod: Pod) {
    const { nodeName } = this.#deps;
    const services = this.#services?.names(pod.metadata!.namespace!);
    return translatePod(pod, { config: this.#config, nodeName, placement: this.#place, services });
  }

  /** `gateway`: the pod's IP in B (or none), as B's status says, told to the gateway. */
  #tellRemoteAddress(downstream: Pod): void {
    if (!this.#network) return;
    const up = upstreamOf(downstream.metadata);
    if (!up) return;
    const running = !downstream.metadata?.deletionTimestamp;
    this.#network.addresses.setRemote(
      podKey(up.namespace, up.name),
      running ? downstream.status?.podIP || undefined : undefined,
    );
  }

  /** `gateway`: Services reflected by an earlier run that A no longer has go from B. */
  #sweepReflections(namespace: string): void {
    this.#network?.reflection.sweep(namespace, this.#signal).catch((err) => {
      this.#deps.log.warn("could not remove stale reflected Services of {namespace}: {err}", {
        namespace,
        err: String(err),
      });
    });
  }

  /** The pod `ns/name` got its IP in A: its status is reported again with it. */
  #reportAgain(k: string): void {
    const [namespace, name] = k.split("/");
    const downstream = this.#downstreamOf(namespace, name);
    if (downstream) this.#relay.onDownstream(downstream);
  }

  /** The downstream pod of the upstream pod `namespace/name`, if B has it. */
  #downstreamOf(namespace: string, name: string): Pod | undefined {
    const place = this.#place;
    return this.#ours.store.get(place.namespaceOf(namespace), place.nameOf(namespace, name));
  }

  /** B cannot schedule the pod: fail it upstream (A's controllers replace it), remove it in B. */
  #failUnschedulable(downstream: Pod, message: string): void {
    const up = upstreamOf(downstream.metadata);
    if (!up) return;
    this.#deps.log.warn("failing {pod}: {message}", {
      pod: podKey(up.namespace, up.name),
      message,
    });
    this.#relay.fail(podKey(up.namespace, up.name), downstream, "DownstreamUnschedulable", message);
    this.#b.pods.delete(downstream.metadata!.namespace!, downstream.metadata!.name!, {
      gracePeriodSeconds: 0,
      preconditions: { uid: downstream.metadata?.uid },
      signal: this.#signal,
    }).catch((err) => {
      if (isKubeNotFound(err) || isConflict(err)) return;
      this.#deps.log.warn("could not remove unschedulable pod {pod} from B: {err}", {
        pod: downstream.metadata?.name,
        err: String(err),
      });
    });
  }

  /**
   * The pod has left B: stop keeping its ConfigMaps, Secrets and token current; with
   * `namespaces: same`, remove B's namespace once nothing runs there.
   */
  #release(k: string, pod: Pod): void {
    if (this.#standingBy) return; // The leader removes what the pod held.
    this.#mirror.untrack(k);
    const namespace = pod.metadata!.namespace!;
    this.#services?.untrack(k, namespace);
    this.#network?.addresses.detach(k, pod).catch((err) => {
      this.#deps.log.warn("could not detach {pod} from the pod network: {err}", {
        pod: k,
        err: String(err),
      });
    });
    const tokenSecret = this.#place.nameOf(namespace, `${pod.metadata!.name}.token`);
    const stopped = this.#config.serviceAccountToken === "upstream"
      ? this.#tokens.stop(pod, tokenSecret)
      : Promise.resolve();
    void stopped.then(() => this.#removeNamespaceIfUnused(this.#place.namespaceOf(namespace)));
  }

  /** `namespaces: same`: B's namespace goes once no pod runs and no claim copy is kept there. */
  async #removeNamespaceIfUnused(where: string): Promise<void> {
    if (this.#claims?.holds(where)) return; // the data of A's claims outlives the pods
    // Ours from our own informer (which has dropped this pod already), the rest from B's.
    const ours = nodeSelector(this.#deps.nodeName).split("=")[1];
    const pods = () => [
      ...this.#ours.store.list(),
      ...this.#node.podsOfB().filter((p) => p.metadata?.labels?.[MARKS.node] !== ours),
    ];
    await this.#place.removeIfUnused(this.#b, where, pods(), { signal: this.#signal }).catch(
      (err) => {
        this.#deps.log.warn("could not remove namespace {namespace} from B: {err}", {
          namespace: where,
          err: String(err),
        });
      },
    );
  }
}
