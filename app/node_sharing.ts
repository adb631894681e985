/**
 * What the nodes of `--nodes` share, so that 1,000 nodes cost the apiserver about what one does:
 * one watch of every scheduled pod split into a view per node (`core/pods/shared_pods.ts`), one
 * services cache, one watch per ConfigMap or Secret whichever nodes' pods refer to it, at most
 * {@link POD_WRITES_IN_FLIGHT} pod writes at once, the node and lease calls of every node on the
 * heartbeat client with bounded concurrency and their periodic reads answered from one watch of
 * the virtual nodes (`heartbeat_api.ts`), and a clock whose sleeps end on shared boundaries.
 * The pod watch lists pods of every node, which a node identity may not (the Node authorizer
 * lets `system:node:<name>` watch its own pods only): one node (`--nodename`) shares nothing.
 * It runs for the whole process, so that under `--leader-elect` a standby's views stay warm.
 * See docs/multinode.md for the figures.
 * @module
 */
import type { Clock } from "../base/clock.ts";
import { getLogger } from "../base/log.ts";
import { TickClock } from "../base/tick_clock.ts";
import type { KubeClient } from "../k8s/mod.ts";
import { type NodeApi, nodeApiFromClient } from "../core/node/mod.ts";
import { ConfigSources, type PodControllerDeps, SharedPodInformer } from "../core/pods/mod.ts";
import { cachedNodeReads, Gate } from "./heartbeat_api.ts";

/**
 * Every node's pod status writes and deletions: at most as many at once as one node's status
 * workers write (64), not 64 per node. The main client's QPS limit bounds their rate but not
 * how many wait at the apiserver, and with 1,000 nodes creating 10,000 pods over 200 were in
 * flight at once, slowing every answer it gave this process — lease renewals included.
 */
const POD_WRITES_IN_FLIGHT = 64;

/** Node and lease calls in flight at once across all nodes. */
const HEARTBEAT_CONCURRENCY = 64;

/**
 * Every node's sleeps end on shared boundaries this far apart: renewals, status checks, pings
 * and their deadlines, and the pods' resyncs, retries and requeues. The renewals of 1,000 nodes
 * go out about 25 at a time instead of one every 10 ms (base/tick_clock.ts has the figures), and
 * the nodes' timers are one per boundary instead of several per node. A sleep ends at most this
 * much later than asked: a renewal 0.25 s late on its 10 s interval, with the lease lasting 40 s.
 */
const NODE_TICK_MS = 250;

/** What {@link NodeSharing} needs. */
export interface NodeSharingDeps {
  kube: KubeClient;
  heartbeat: KubeClient;
  clock: Clock;
}

/** The watches, bounds and clock the nodes of one process share; see the module doc. */
export class NodeSharing {
  readonly #kube: KubeClient;
  readonly #pods: SharedPodInformer;
  readonly #podWrites = new Gate(POD_WRITES_IN_FLIGHT);
  readonly #nodes: ReturnType<KubeClient["nodes"]["informer"]>;
  readonly configSources: ConfigSources;
  /** The clock of every node's controllers: the process's, on {@link NODE_TICK_MS} boundaries. */
  readonly clock: TickClock;
  /** Node and lease calls of every node, their periodic reads from the virtual nodes' watch. */
  readonly heartbeat: NodeApi;
  /** ...which wait their turn here, leases first. */
  readonly heartbeatSlots = new Gate(HEARTBEAT_CONCURRENCY);
  /** Events the nodes' recorders dropped at shutdown, told once for all (not one line each). */
  #unsentEvents = 0;

  constructor(deps: NodeSharingDeps) {
    this.#kube = deps.kube;
    this.clock = new TickClock(deps.clock, NODE_TICK_MS);
    this.#pods = new SharedPodInformer({ kube: deps.kube, clock: deps.clock });
    this.configSources = new ConfigSources({
      api: deps.kube,
      clock: deps.clock,
      log: getLogger(["vkubelet", "pods"]),
    });
    this.#nodes = deps.heartbeat.nodes.informer({
      labelSelector: "type=virtual-kubelet",
      clock: deps.clock,
      name: "virtual nodes",
    });
    this.heartbeat = cachedNodeReads(nodeApiFromClient(deps.heartbeat), this.#nodes);
  }

  /**
   * The pod controller's API for node `name`: its view of the shared pod watch and the shared
   * services cache for informers, its status writes and deletions through the shared bound.
   * Views are made before {@link run}: a node added later would miss the pods listed before it.
   */
  podApi(name: string): PodControllerDeps["api"] {
    const kube = this.#kube;
    const view = this.#pods.view(name);
    const services = this.#pods.services();
    return {
      pods: { ...bind(kube.pods, this.#podWrites), informer: () => view },
      services: { informer: () => services },
      configMaps: kube.configMaps,
      secrets: kube.secrets,
      persistentVolumeClaims: kube.persistentVolumeClaims,
      events: kube.events,
    };
  }

  /** The pod controller's options: the shared ConfigMap and Secret watches, events counted. */
  get podOptions(): Pick<PodControllerDeps, "configSources" | "onUnsentEvents"> {
    return {
      configSources: this.configSources,
      onUnsentEvents: (count) => this.#unsentEvents += count,
    };
  }

  /** Runs the shared watches until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([
      this.#pods.run(signal),
      this.configSources.run(signal),
      this.#nodes.run(signal),
    ]);
  }

  /** Stops watching for a removed node: its view, and its pods' ConfigMaps and Secrets. */
  forget(name: string, podKeys: string[]): void {
    this.#pods.forget(name);
    for (const key of podKeys) this.configSources.untrack(key);
    this.reportUnsentEvents(`node ${name}`);
  }

  /** Logs the events the nodes' recorders dropped at shutdown, once. */
  reportUnsentEvents(whose = "the nodes"): void {
    if (this.#unsentEvents === 0) return;
    getLogger(["vkubelet", "pods"]).warn("{count} events of {whose} not sent before shutdown", {
      count: this.#unsentEvents,
      whose,
    });
    this.#unsentEvents = 0;
  }
}

/**
 * The pod calls of the client, bound so they can be spread into another object, the writes
 * through `writes`.
 */
function bind(pods: KubeClient["pods"], writes: Gate) {
  type Pods = KubeClient["pods"];
  const updateStatus: Pods["updateStatus"] = (pod, options = {}) =>
    writes.run(() => pods.updateStatus(pod, options), options);
  const remove: Pods["delete"] = (namespace, name, options = {}) =>
    writes.run(() => pods.delete(namespace, name, options), options);
  return { get: pods.get.bind(pods), updateStatus, delete: remove };
}
