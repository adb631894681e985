/**
 * `NodeSet`: several virtual nodes served by one process (`--nodes`). Each node keeps the
 * controllers a single vkubelet has, unchanged — node, lease and health (`core/node`), pods
 * (`core/pods`) — and what they share is wired here, through the deps they already take: one
 * client, one pod watch split into a view per node (`core/pods/shared_pods.ts`), one services cache, one
 * watch per referenced ConfigMap or Secret whichever nodes' pods refer to it, and
 * the node and lease calls of every node on one heartbeat client with bounded concurrency
 * (`heartbeat_api.ts`). Each node's kubelet API app is looked up by the address a connection
 * reached ({@link NodeSet.apiDepsAt}).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../base/clock.ts";
import { getLogger } from "../base/log.ts";
import { TickClock } from "../base/tick_clock.ts";
import type { KubeClient } from "../k8s/mod.ts";
import type { Provider } from "../provider/mod.ts";
import { podKeyOf } from "../provider/mod.ts";
import type { CallSlots, HealthSource, NodeApi, NodeSide } from "../core/node/mod.ts";
import {
  ConfigSources,
  type EventRecorder,
  type PodController,
  SharedPodInformer,
} from "../core/pods/mod.ts";
import type { VkubeletMetrics } from "../core/metrics.ts";
import type { Tracer } from "../core/tracing.ts";
import type { KubeletApiDeps } from "../core/kubelet_api/types.ts";
import type { Config } from "./config/config.ts";
import { Gate } from "./heartbeat_api.ts";
import { wireNode } from "./wire_node.ts";

/** Pod writes of all nodes in flight at once: one node's status workers' worth. */
const POD_WRITES_IN_FLIGHT = 64;

/**
 * Every node's sleeps end on shared boundaries this far apart: renewals, status checks, pings
 * and their deadlines, and the pods' resyncs, retries and requeues. The renewals of 1,000 nodes
 * go out about 25 at a time instead of one every 10 ms (base/tick_clock.ts has the figures), and
 * the nodes' timers are one per boundary instead of several per node. A sleep ends at most this
 * much later than asked: a renewal 0.25 s late on its 10 s interval, with the lease lasting 40 s.
 */
const NODE_TICK_MS = 250;

/** One entry of `nodes`, with its address resolved. */
export interface NodeEntry {
  name: string;
  nodeIp: string;
  labels: Record<string, string>;
  providerConfig?: string;
}

/** What {@link NodeSet} needs. */
export interface NodeSetDeps {
  /** The one client for pods, events, ConfigMaps, Secrets and Services. */
  kube: KubeClient;
  /** Node and lease calls of every node (the heartbeat client)... */
  heartbeat: NodeApi;
  /** ...which wait their turn here (a `Gate` of `heartbeat_api.ts`), leases first. */
  heartbeatSlots?: CallSlots;
  clock: Clock;
  metrics: VkubeletMetrics;
  /** Spans for pod syncs; none when tracing is off. */
  tracer?: Tracer;
  /** The provider of each node, by node name. */
  providers: Map<string, Provider>;
  /** Each node's event recorder, shared with its provider; default: the controller's own. */
  recorders?: Map<string, EventRecorder>;
  /** The kubelet API deps every node shares (authentication, streaming). */
  apiBase: Pick<KubeletApiDeps, "auth" | "streaming" | "clock" | "metrics" | "tracer">;
}

interface Member {
  entry: NodeEntry;
  provider: Provider;
  side: NodeSide;
  pods: PodController;
  stop: AbortController;
  done?: Promise<void>;
  apiDeps?: Omit<KubeletApiDeps, "signal">;
}

/** The nodes of one process; see the module doc. */
export class NodeSet {
  readonly #members = new Map<string, Member>();
  readonly #byIp = new Map<string, string>();
  readonly #shared: SharedPodInformer;
  /**
   * Every node's pod status writes and deletions: at most as many at once as one node's status
   * workers write (64), not 64 per node. The main client's QPS limit bounds their rate but not
   * how many wait at the apiserver, and with 1,000 nodes creating 10,000 pods over 200 were in
   * flight at once, slowing every answer it gave this process — lease renewals included.
   */
  readonly #podWrites = new Gate(POD_WRITES_IN_FLIGHT);
  /** Watches of the ConfigMaps and Secrets pods refer to, one per object for every node. */
  readonly #configSources: ConfigSources;
  /** The clock of every node's controllers: the process's, on {@link NODE_TICK_MS} boundaries. */
  readonly #nodeClock: TickClock;
  readonly #deps: NodeSetDeps;
  /** Events the nodes' recorders dropped at shutdown, told once for all (not one line each). */
  #unsentEvents = 0;

  constructor(config: Config, deps: NodeSetDeps) {
    this.#deps = deps;
    this.#nodeClock = new TickClock(deps.clock, NODE_TICK_MS);
    this.#shared = new SharedPodInformer({ kube: deps.kube, clock: deps.clock });
    this.#configSources = new ConfigSources({
      api: deps.kube,
      clock: deps.clock,
      log: getLogger(["vkubelet", "pods"]),
    });
    const entries = config.nodes as NodeEntry[];
    for (const [i, entry] of entries.entries()) {
      // Renewals spread evenly over the interval instead of all nodes renewing at once.
      this.#members.set(entry.name, this.#member(config, entry, i / entries.length));
      this.#byIp.set(entry.nodeIp, entry.name);
    }
  }

  /** The names of the nodes served now. */
  get names(): string[] {
    return [...this.#members.keys()];
  }

  /** Every node's pods as the API has them; for metrics. */
  pods(): Pod[] {
    return [...this.#members.values()].flatMap((m) => m.pods.pods());
  }

  /**
   * Healthy while every node's provider answers its ping; otherwise the first failing node's
   * message, named. For the metrics listener's `/healthz`.
   */
  readonly health: HealthSource = {
    current: () => {
      for (const m of this.#members.values()) {
        const health = m.side.health.current();
        if (!health.healthy) {
          return { ...health, message: `node ${m.entry.name}: ${health.message}` };
        }
      }
      return { healthy: true, since: 0 };
    },
    onChange: () => () => {},
    ready: Promise.resolve(),
  };

  /** Keys waiting in all nodes' queues; for metrics. */
  get queueLengths(): { sync: number; status: number } {
    let sync = 0, status = 0;
    for (const m of this.#members.values()) {
      sync += m.pods.queueLengths.sync;
      status += m.pods.queueLengths.status;
    }
    return { sync, status };
  }

  /** The kubelet API deps of the node whose nodeIp is `address`. */
  apiDepsAt(address: string): Omit<KubeletApiDeps, "signal"> | undefined {
    const member = this.#members.get(this.#byIp.get(address) ?? "");
    if (!member) return undefined;
    const name = member.entry.name;
    return member.apiDeps ??= {
      ...this.#deps.apiBase,
      provider: member.provider,
      nodeName: name,
      podCache: () => member.pods.pods(),
      log: getLogger(["vkubelet", "kubelet-api"]).with({ node: name }),
    };
  }

  /**
   * Resolves once every node is registered and its pod cache synced; rejects with the first
   * node that failed. Meaningful after {@link run} started.
   */
  get ready(): Promise<void> {
    return Promise.all([...this.#members.values()].map(async (m) => {
      await m.side.ready;
      await m.pods.ready;
    })).then(() => {});
  }

  /** Runs the shared informers and every node until `signal` aborts and they have stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const shared = this.#shared.run(signal);
    const configSources = this.#configSources.run(signal);
    for (const member of this.#members.values()) this.#startMember(member, signal);
    await Promise.all([
      shared,
      configSources,
      ...[...this.#members.values()].map((m) => m.done),
    ]);
    const n = this.#members.size;
    this.#reportUnsentEvents(n === 1 ? "1 node" : `${n} nodes`);
  }

  #reportUnsentEvents(whose: string): void {
    if (this.#unsentEvents === 0) return;
    getLogger(["vkubelet", "pods"]).warn("{count} events of {whose} not sent before shutdown", {
      count: this.#unsentEvents,
      whose,
    });
    this.#unsentEvents = 0;
  }

  /**
   * Stops serving `name`: its controllers stop (its Lease is no longer renewed, so the
   * node-lifecycle controller marks it NotReady) and its pods are no longer watched.
   */
  async remove(name: string): Promise<void> {
    const member = this.#members.get(name);
    if (!member) throw new RangeError(`node ${name} is not served by this process`);
    this.#members.delete(name);
    this.#byIp.delete(member.entry.nodeIp);
    const keys = member.pods.pods().map(podKeyOf);
    this.#shared.forget(name);
    member.stop.abort();
    await member.done;
    this.#reportUnsentEvents(`node ${name}`);
    // Its pods no longer hold the shared ConfigMap and Secret watches.
    for (const key of keys) this.#configSources.untrack(key);
    await member.provider.close?.();
  }

  /** Closes every provider (after `start`'s `done`). */
  async close(): Promise<void> {
    await Promise.all([...this.#members.values()].map((m) => m.provider.close?.()));
  }

  #startMember(member: Member, signal: AbortSignal): void {
    const stop = AbortSignal.any([signal, member.stop.signal]);
    member.done = Promise.all([member.side.run(stop), member.pods.run(stop)]).then(() => {});
  }

  #member(config: Config, entry: NodeEntry, leasePhase: number): Member {
    const { kube, metrics, heartbeat } = this.#deps;
    const provider = this.#deps.providers.get(entry.name);
    if (!provider) throw new RangeError(`no provider was loaded for node ${entry.name}`);
    const view = this.#shared.view(entry.name);
    const services = this.#shared.services();
    const { side, pods } = wireNode({
      ...config,
      nodeName: entry.name,
      nodeLabels: { ...config.nodeLabels, ...entry.labels },
    }, {
      heartbeat: { api: heartbeat },
      // The controller asks for its informers; it gets the shared views.
      podApi: {
        pods: { ...bind(kube.pods, this.#podWrites), informer: () => view },
        services: { informer: () => services },
        configMaps: kube.configMaps,
        secrets: kube.secrets,
        persistentVolumeClaims: kube.persistentVolumeClaims,
        events: kube.events,
      },
      provider,
      clock: this.#nodeClock,
      metrics,
      internalIp: entry.nodeIp,
      side: { leasePhase, slots: this.#deps.heartbeatSlots },
      pods: {
        configSources: this.#configSources,
        onUnsentEvents: (count) => this.#unsentEvents += count,
        recorder: this.#deps.recorders?.get(entry.name),
      },
    });
    return { entry, provider, side, pods, stop: new AbortController() };
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
