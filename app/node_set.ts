/**
 * `NodeSet`: the virtual nodes of one process — one node (`--nodename`) is a set of one, as KWOK
 * runs one node as N = 1 of many and virtual-kubelet's `nodeutil` wraps every node alike. Each
 * node keeps the controllers a kubelet has — node, lease and health (`core/node`), pods
 * (`core/pods`) — wired by `wire_node.ts`. What several nodes share comes in as
 * {@link NodeSharing} (`--nodes`): one pod watch split into a view per node, one watch per
 * referenced ConfigMap or Secret, the node and lease calls of every node on one heartbeat client
 * with bounded concurrency (`heartbeat_api.ts`), a clock ticking on shared boundaries. Without
 * it each node watches its own pods (`spec.nodeName=<node>`), the one pod watch a node identity
 * (`system:node:<name>`) may make, and reaches the apiserver through a heartbeat client of its
 * own. Under `--leader-elect` a set is made for each term, from the standby's warm caches and
 * fenced providers ({@link WarmStandby}). Each node's kubelet API app is looked up by name or by
 * the address a connection reached ({@link NodeSet.apiDepsAt}).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../base/clock.ts";
import { getLogger } from "../base/log.ts";
import type { KubeClient } from "../k8s/mod.ts";
import type { Provider } from "../provider/mod.ts";
import { podKeyOf } from "../provider/mod.ts";
import type { HealthSource, NodeSide } from "../core/node/mod.ts";
import type { EventRecorder, PodController } from "../core/pods/mod.ts";
import type { VkubeletMetrics } from "../core/metrics.ts";
import type { Tracer } from "../core/tracing.ts";
import type { KubeletApiDeps } from "../core/kubelet_api/types.ts";
import type { Config } from "./config/config.ts";
import type { NodeSharing } from "./node_sharing.ts";
import type { WarmStandby } from "./leader_run.ts";
import { wireNode } from "./wire_node.ts";

/** One node of the set, with its address resolved. */
export interface NodeEntry {
  name: string;
  nodeIp: string;
  labels: Record<string, string>;
  providerConfig?: string;
}

/** What {@link NodeSet} needs. */
export interface NodeSetDeps {
  entries: NodeEntry[];
  /** The one client for pods, events, ConfigMaps, Secrets and Services. */
  kube: KubeClient;
  /** The heartbeat client: each node's status and Lease go through it (`run/clients.ts`). */
  heartbeat: KubeClient;
  clock: Clock;
  metrics: VkubeletMetrics;
  /** Spans for pod syncs; none when tracing is off. */
  tracer?: Tracer;
  /** The provider of each node, by node name. */
  providers: Map<string, Provider>;
  /** Each node's event recorder, shared with its provider; default: the controller's own. */
  recorders?: Map<string, EventRecorder>;
  /** What the nodes share (`--nodes`); none: each node watches and heartbeats on its own. */
  sharing?: NodeSharing;
  /** A `--leader-elect` standby's caches, health and fenced provider, by node name. */
  warm?: Map<string, WarmStandby>;
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
  readonly #deps: NodeSetDeps;

  constructor(config: Config, deps: NodeSetDeps) {
    this.#deps = deps;
    for (const [i, entry] of deps.entries.entries()) {
      // Renewals spread evenly over the interval instead of all nodes renewing at once.
      this.#members.set(entry.name, this.#member(config, entry, i / deps.entries.length));
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

  /** Every node's provider health, for the metrics listener's `/healthz`. */
  get health(): HealthSource {
    return combinedHealth([...this.#members.values()].map((m) => [m.entry.name, m.side.health]));
  }

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
    return this.apiDeps(this.#byIp.get(address) ?? "");
  }

  /** The kubelet API deps of the node `name`, while it is served. */
  apiDeps(name: string): Omit<KubeletApiDeps, "signal"> | undefined {
    const member = this.#members.get(name);
    if (!member) return undefined;
    return member.apiDeps ??= {
      ...this.#deps.apiBase,
      provider: member.provider,
      nodeName: name,
      podCache: () => member.pods.pods(),
      log: getLogger(["vkubelet", "kubelet-api"]).with({ node: name }),
    };
  }

  /** Resolves once every node is registered; rejects with the first that failed. */
  get registered(): Promise<void> {
    return Promise.all([...this.#members.values()].map((m) => m.side.ready)).then(() => {});
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

  /**
   * Runs every node until `signal` aborts and they have stopped. The shared watches are their
   * owner's to run ({@link NodeSharing.run}): under `--leader-elect` they outlive the set.
   */
  async run(signal: AbortSignal): Promise<void> {
    for (const member of this.#members.values()) this.#startMember(member, signal);
    await Promise.all([...this.#members.values()].map((m) => m.done));
    this.#deps.sharing?.reportUnsentEvents();
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
    member.stop.abort();
    await member.done;
    this.#deps.sharing?.forget(name, keys);
    await member.provider.close?.();
  }

  /**
   * The node side first, the pods once the node is registered: the pods' env takes unset limits
   * from the node's allocatable, as the kubelet admits pods only after it registered its node.
   */
  #startMember(member: Member, signal: AbortSignal): void {
    const stop = AbortSignal.any([signal, member.stop.signal]);
    const side = member.side.run(stop);
    const pods = Promise.race([member.side.ready.then(() => true, () => false), aborted(stop)])
      .then((registered) => registered && !stop.aborted ? member.pods.run(stop) : undefined);
    member.done = Promise.all([side, pods]).then(() => {});
  }

  #member(config: Config, entry: NodeEntry, leasePhase: number): Member {
    const { kube, metrics, sharing, clock } = this.#deps;
    const warm = this.#deps.warm?.get(entry.name);
    const provider = warm?.provider ?? this.#deps.providers.get(entry.name);
    if (!provider) throw new RangeError(`no provider was loaded for node ${entry.name}`);
    const { side, pods } = wireNode({
      ...config,
      nodeName: entry.name,
      nodeLabels: { ...config.nodeLabels, ...entry.labels },
    }, {
      heartbeat: sharing ? { api: sharing.heartbeat } : { client: this.#deps.heartbeat },
      podApi: sharing ? sharing.podApi(entry.name) : kube,
      provider,
      clock: sharing?.clock ?? clock,
      metrics,
      internalIp: entry.nodeIp,
      side: {
        ...(sharing ? { leasePhase, slots: sharing.heartbeatSlots } : {}),
        health: warm?.health,
      },
      pods: {
        caches: warm?.caches,
        ...sharing?.podOptions,
        recorder: this.#deps.recorders?.get(entry.name),
      },
      tracer: this.#deps.tracer,
    });
    return { entry, provider, side, pods, stop: new AbortController() };
  }
}

/** Resolves to false when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<false> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    signal.addEventListener("abort", () => resolve(false), { once: true });
  });
}

/**
 * The health of several nodes' providers as one: healthy while every one answers its ping,
 * otherwise the first failing node's message, named. One node's is its own, as it is.
 */
export function combinedHealth(nodes: [string, HealthSource][]): HealthSource {
  if (nodes.length === 1) return nodes[0][1];
  return {
    current: () => {
      for (const [name, source] of nodes) {
        const health = source.current();
        if (!health.healthy) return { ...health, message: `node ${name}: ${health.message}` };
      }
      return { healthy: true, since: 0 };
    },
    onChange: () => () => {},
    ready: Promise.resolve(),
  };
}
