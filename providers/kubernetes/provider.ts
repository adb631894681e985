/**
 * The kubernetes provider: each pod bound to the virtual node in cluster A runs as one pod in a
 * namespace of cluster B. Creates, updates and deletes follow the upstream pod
 * (`./pods/downstream_pods.ts`); B's status comes back through an informer of B and
 * {@link KubernetesProvider.notifyPods} (`./status/status_relay.ts`); listPods answers only this
 * node's downstream pods (label `vkubelet.io/virtual-node`), so the core's orphan sweep, which runs
 * after its first full listing of A, deletes exactly the pods whose twin is gone. What pods hold
 * in B is let go in `./pods/pod_holdings.ts`, the node side is `./node/downstream_node.ts`, logs,
 * exec and stats `./streaming/access.ts`; `./parts.ts` builds and wires the parts.
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import type {
  AttachOptions,
  CallOptions,
  ContainerLogOptions,
  ContainerRef,
  ExecOptions,
  PodRef,
  PortForwardOptions,
  Provider,
  ProviderDeps,
  StatsSummary,
} from "../../provider/mod.ts";
import type { KubernetesConfig } from "./config.ts";
import { buildParts, type KubernetesClients, type KubernetesParts } from "./parts.ts";
import { DownstreamPods } from "./pods/downstream_pods.ts";
import { PodHoldings } from "./pods/pod_holdings.ts";
import { DEFERRED_FIELD_PATHS } from "./translate/translate.ts";

export type { KubernetesClients } from "./parts.ts";

/** Forwards the virtual node's pods to cluster B; see the module doc. */
export class KubernetesProvider implements Provider {
  /** The pods live in cluster B, so replicas of the node can take turns (`--leader-elect`). */
  readonly highAvailability = true;
  /** B assigns the pod and host IPs: env fieldRefs to them are resolved by B's kubelet. */
  readonly deferredFieldPaths = DEFERRED_FIELD_PATHS;
  readonly #stop = new AbortController();
  readonly #parts: KubernetesParts;
  readonly #pods: DownstreamPods;
  readonly #holdings: PodHoldings;

  constructor(config: KubernetesConfig, deps: ProviderDeps, clients: KubernetesClients) {
    const signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#parts = buildParts(config, deps, clients, signal, {
      release: (k, pod) => this.#holdings.release(k, pod),
      removeNamespaceIfUnused: (where) => void this.#holdings.removeNamespaceIfUnused(where),
      failUnschedulable: (pod, message) => this.#pods.failUnschedulable(pod, message),
    });
    this.#pods = new DownstreamPods(this.#parts);
    this.#holdings = new PodHoldings(this.#parts);
  }

  createPod(pod: Pod, options: CallOptions): Promise<void> {
    return this.#pods.create(pod, options);
  }

  updatePod(pod: Pod, options: CallOptions): Promise<void> {
    return this.#pods.update(pod, options);
  }

  deletePod(pod: Pod, options: CallOptions): Promise<void> {
    return this.#pods.delete(pod, options);
  }

  getPod(namespace: string, name: string, _options: CallOptions): Promise<Pod | undefined> {
    return Promise.resolve(this.#pods.get(namespace, name));
  }

  listPods(options: CallOptions): Promise<Pod[]> {
    return this.#pods.list(options);
  }

  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.#parts.relay.notifyPods(callback);
  }

  configureNode(node: Node): Promise<void> {
    const { state } = this.#parts;
    state.hostname = node.metadata?.labels?.["kubernetes.io/hostname"] ?? state.hostname;
    return this.#parts.node.configureNode(node);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#parts.node.notifyNodeChanged(callback);
  }

  ping(options: CallOptions): Promise<void> {
    return this.#parts.node.ping(options);
  }

  getContainerLogs(
    container: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return this.#parts.access.logs(container, options);
  }

  runInContainer(container: ContainerRef, options: ExecOptions): Promise<number> {
    return this.#parts.access.exec(container, options);
  }

  attachToContainer(container: ContainerRef, options: AttachOptions): Promise<void> {
    return this.#parts.access.attach(container, options);
  }

  portForward(pod: PodRef, options: PortForwardOptions): Promise<void> {
    return this.#parts.access.portForward(pod, options);
  }

  getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    return this.#parts.access.statsSummary(options);
  }

  getMetricsResource(options: CallOptions): Promise<string> {
    return this.#parts.access.metrics(options);
  }

  /** `--leader-elect`: a new term; see {@link PodHoldings.resume}. */
  resume(pods: readonly Pod[]): void {
    this.#holdings.resume(pods);
  }

  /** `--leader-elect`: the term ended; see {@link PodHoldings.standby}. */
  standby(): void {
    this.#holdings.standby();
  }

  async close(): Promise<void> {
    const { node, tokens, running, mirror, services, b } = this.#parts;
    this.#stop.abort();
    node.close();
    tokens.close();
    await Promise.allSettled(running);
    await mirror.close();
    await services?.close();
    b.close();
  }
}
