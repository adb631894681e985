/**
 * The virtual node as cluster B makes it: capacity from two informers of B (the selected nodes,
 * and non-terminated pods everywhere) and the labels all selected nodes share, announced to the
 * core debounced and only when they changed;
 * the node's registration fields; and the ping that tells whether B's apiserver answers.
 * @module
 */
import type { Node, NodeStatus, Pod } from "kubernetes-types/core/v1.d.ts";
import type { Informer, KubeClient } from "../../../k8s/mod.ts";
import { backendUnreachable, type CallOptions, raceSignal } from "../../../provider/mod.ts";
import { freeCapacity, isUsableNode, toQuantities } from "./capacity.ts";
import { type Fit, fitOnSomeNode } from "./fit.ts";
import type { KubernetesConfig } from "../config.ts";
import { MARKS, nodeSelector } from "../names.ts";
import { raceTimeout } from "../_private.ts";

/** Labels of B's nodes that are not true of the virtual node: their names and roles. */
const NOT_SHARED = /^(kubernetes\.io\/hostname|node-role\.kubernetes\.io\/.*)$/;

/** What {@link DownstreamNode} needs. */
export interface DownstreamNodeDeps {
  config: KubernetesConfig;
  /** The client of cluster B. */
  downstream: KubeClient;
  nodeName: string;
  internalIp: string;
  daemonPort: number;
}

/** The node side of the kubernetes provider: capacity, registration fields and ping. */
export class DownstreamNode {
  readonly #deps: DownstreamNodeDeps;
  readonly #nodes: Informer<Node>;
  readonly #allPods: Informer<Pod>;
  readonly #callbacks = new Set<() => void>();
  #capacity = "";
  #capacityTimer?: ReturnType<typeof setTimeout>;

  constructor(deps: DownstreamNodeDeps) {
    this.#deps = deps;
    const b = deps.downstream;
    const selector = Object.entries(deps.config.nodeSelector).map(([k, v]) => `${k}=${v}`)
      .join(",");
    this.#nodes = b.nodes.informer({
      labelSelector: selector || undefined,
      name: "downstream nodes",
    });
    this.#allPods = b.pods.informer({
      fieldSelector: "status.phase!=Succeeded,status.phase!=Failed",
      name: "downstream pods (capacity)",
    });
    for (const informer of [this.#nodes, this.#allPods] as Informer<Node | Pod>[]) {
      for (const event of ["add", "update", "delete"] as const) {
        informer.on(event, () => this.#capacityChanged());
      }
    }
  }

  /** Runs both informers of B until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([this.#nodes.run(signal), this.#allPods.run(signal)]);
  }

  /** Fills the Node's labels, providerID, capacity, addresses and daemon endpoint. */
  async configureNode(node: Node): Promise<void> {
    // At registration, give B a moment so the first capacity is real rather than zero.
    await raceTimeout(Promise.all([this.#nodes.synced, this.#allPods.synced]), 5_000);
    node.metadata ??= {};
    node.metadata.labels = {
      // The labels every selected node of B has, so A's scheduler can match on them
      // (admiralty#84); the virtual node's own labels win.
      ...this.#sharedLabels(),
      ...node.metadata.labels,
      "node.kubernetes.io/exclude-from-external-load-balancers": "true",
    };
    node.spec ??= {};
    node.spec.providerID ??= `vkubelet-kubernetes://${
      this.#deps.config.namespace ?? "-"
    }/${this.#deps.nodeName}`;
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

  /** Whether one selected node of B can take the (translated) pod now; see `./fit.ts`. */
  async fit(pod: Pod, options: CallOptions): Promise<Fit> {
    await raceSignal(Promise.all([this.#nodes.synced, this.#allPods.synced]), options.signal);
    return fitOnSomeNode(pod, this.#nodes.store.list(), this.#allPods.store.list());
  }

  /** Every pod of B that has not finished, on any node or none (from the capacity informer). */
  podsOfB(): Pod[] {
    return this.#allPods.store.list();
  }

  /** Calls `callback` whenever the capacity changed. */
  notifyNodeChanged(callback: () => void): void {
    this.#callbacks.add(callback);
  }

  /** Resolves when B's apiserver answers within the configured ping timeout. */
  async ping(options: CallOptions): Promise<void> {
    const timeout = this.#deps.config.pingTimeout;
    const signal = AbortSignal.any([
      AbortSignal.timeout(timeout),
      ...(options.signal ? [options.signal] : []),
    ]);
    try {
      await this.#deps.downstream.request({ path: "/version", signal });
    } catch (err) {
      throw backendUnreachable(
        `the downstream cluster's apiserver at ${this.#deps.downstream.config.server}`,
        signal.aborted
          ? new Error(`no answer to GET /version within ${timeout} ms`, { cause: err })
          : err,
        {
          reason: "DownstreamClusterUnreachable",
          hint: "check the downstream kubeconfig and that the cluster runs",
        },
      );
    }
  }

  /** Drops a pending capacity announcement. */
  close(): void {
    clearTimeout(this.#capacityTimer);
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

  #sharedLabels(): Record<string, string> {
    const nodes = this.#nodes.store.list().filter(isUsableNode);
    if (nodes.length === 0) return {};
    const shared: Record<string, string> = { ...nodes[0].metadata?.labels };
    for (const node of nodes.slice(1)) {
      for (const [k, v] of Object.entries(shared)) {
        if (node.metadata?.labels?.[k] !== v) delete shared[k];
      }
    }
    for (const k of Object.keys(shared)) if (NOT_SHARED.test(k)) delete shared[k];
    return shared;
  }

  #capacityChanged(): void {
    if (this.#capacityTimer !== undefined) return;
    // Debounced: a burst of pod events in B becomes one node update.
    this.#capacityTimer = setTimeout(() => {
      this.#capacityTimer = undefined;
      const next = JSON.stringify([this.#currentCapacity(), this.#sharedLabels()]);
      if (next === this.#capacity) return;
      this.#capacity = next;
      for (const callback of this.#callbacks) callback();
    }, 1_000);
  }
}
