/**
 * vkubelet under `--leader-elect` (issue 21): several replicas of one node, or of one set of
 * `--nodes`, one leader. Every replica is a warm standby — config validated, providers loaded and
 * pinged, the cluster client connected, each node's pods, the Services and the pods' ConfigMaps
 * and Secrets cached and synced ({@link PodCaches}), `/healthz` and `/metrics` served — and
 * campaigns for the Lease `<namespace>/vkubelet-<node>` ({@link LeaderElector}), a set's named
 * after its first node: one Lease, so one leader serves every node of the set. Only while it leads does it run the
 * writers (`lead`: the kubelet API, node controller, node Lease, pods, events), with a provider
 * whose create/update/delete and a client whose writes are fenced ({@link LeadershipFence}),
 * from the standby's caches and provider health ({@link WarmStandby}): a new leader lists
 * nothing and pings nothing before it writes. The provider is told when a term starts
 * (`resume`, with the cached pods) and ends (`standby`). When the term ends — lost lease, or a
 * SIGTERM that releases it — the writers stop and the replica stands by again (on SIGTERM it
 * exits).
 * @module
 */
import type { Clock } from "../base/clock.ts";
import { getLogger } from "../base/log.ts";
import type { Provider } from "../provider/mod.ts";
import { KubeClient } from "../k8s/mod.ts";
import { HealthMonitor, type HealthSource } from "../core/node/mod.ts";
import { type ConfigSources, PodCaches, type PodCachesDeps } from "../core/pods/mod.ts";
import type { VkubeletMetrics } from "../core/metrics.ts";
import type { Config } from "./config/config.ts";
import { parseHostPort } from "./config/schema.ts";
import { type MetricsListener, serveMetrics } from "./metrics_server.ts";
import { LeaderElector, type LeadershipFence } from "../k8s/leader_election/mod.ts";
import { fenceProvider } from "./fenced_provider.ts";
import { combinedHealth } from "./node_set.ts";

/** What a standby keeps warm for a node's terms: read-only, run for the whole process. */
export interface WarmStandby {
  /** This node's pods, the Services, the pods' ConfigMaps and Secrets; synced. */
  caches: PodCaches;
  /** The provider's health, pinged already. */
  health: HealthSource;
  /** The node's provider, its create, update and delete fenced by the lease. */
  provider: Provider;
}

/** One node a standby keeps warm. */
export interface StandbyNode {
  name: string;
  provider: Provider;
  /** What its caches read through: the client, or its view of the shared watches (`--nodes`). */
  podApi: PodCachesDeps["api"];
  /** ConfigMap and Secret watches shared with the other nodes (`--nodes`), run by their owner. */
  configSources?: ConfigSources;
}

/** What {@link runLeaderElected} needs. */
export interface LeaderElectedDeps {
  /** Aborts on SIGINT/SIGTERM: the leader releases the lease, and the replica exits. */
  signal: AbortSignal;
  clock: Clock;
  /** The replica's client, its writes guarded by `fence` (`beforeSend`). */
  kube: KubeClient;
  /** The nodes of the set: one lease for all of them, one leader serving every one. */
  nodes: StandbyNode[];
  fence: LeadershipFence;
  metrics: VkubeletMetrics;
  /** Runs the writers from `warm` (by node name) until `signal` aborts; then drains them. */
  lead(signal: AbortSignal, warm: Map<string, WarmStandby>): Promise<void>;
  /** Called once the standby is warm. */
  onReady?(): void;
  /** `holderIdentity`; default `$POD_NAME` or `$HOSTNAME` plus a random suffix. */
  identity?: string;
}

/**
 * The leader election Lease's name for a node; a set of `--nodes` is named after its first
 * node (one Lease, one leader for the set).
 */
export function leaderLeaseName(nodeName: string): string {
  return `vkubelet-${nodeName}`;
}

/** Why `--leader-elect` cannot be used with this provider, or undefined if it can. */
export function highAvailabilityProblem(config: Config, provider: Provider): string | undefined {
  if (!config.leaderElect || provider.highAvailability === true) return undefined;
  return `--leader-elect: provider ${config.provider} cannot run as several replicas of one node ` +
    "(its pods live in the vkubelet process, so a second replica would start them again); " +
    "run one replica without --leader-elect, or use a provider whose pods live elsewhere " +
    "(kubernetes, mock)";
}

/** A unique `holderIdentity`: the pod or host name and a random suffix. */
export function defaultIdentity(): string {
  const name = Deno.env.get("POD_NAME") ?? Deno.env.get("HOSTNAME") ?? "vkubelet";
  return `${name}_${crypto.randomUUID().slice(0, 8)}`;
}

/** Stands by and leads in turns until `deps.signal` aborts; see the module doc. */
export async function runLeaderElected(config: Config, deps: LeaderElectedDeps): Promise<void> {
  const { clock, kube, fence, metrics } = deps;
  // Everything here stops with the caller's signal, or when start-up fails.
  const stop = new AbortController();
  const signal = AbortSignal.any([deps.signal, stop.signal]);
  const leaseName = leaderLeaseName(deps.nodes[0].name);
  const log = getLogger(["vkubelet", "leader"]).with(
    deps.nodes.length === 1 ? { node: deps.nodes[0].name } : { nodes: deps.nodes.length },
  );
  const identity = deps.identity ?? defaultIdentity();
  metrics.leader.set(0);
  // The standby's view of each provider (/healthz) and its caches, handed to each term.
  const warm = new Map(deps.nodes.map((node) => [node.name, warmNode(node, fence, clock)]));
  const running = [...warm.values()].flatMap((w) => [w.health.run(signal), w.caches.run(signal)]);
  const standby = () => deps.nodes.forEach((node) => node.provider.standby?.());
  // A replica that never led keeps nothing current in the provider's name either.
  standby();
  let listener: MetricsListener | undefined;
  // Lease requests on a client of their own: never queued behind pod status writes.
  const electorClient = new KubeClient(kube.config, { clock, qps: 0, retry: { maxRetries: 0 } });
  const elector = new LeaderElector({
    leases: electorClient.leases,
    clock,
    log,
    fence,
    namespace: config.leaderElectNamespace,
    name: leaseName,
    identity,
    leaseDurationMs: config.leaderElectLeaseDuration,
    renewDeadlineMs: config.leaderElectRenewDeadline,
    retryPeriodMs: config.leaderElectRetryPeriod,
    onStartedLeading: (term) => {
      metrics.leader.set(1);
      for (const node of deps.nodes) {
        node.provider.resume?.(warm.get(node.name)!.caches.pods.store.list());
      }
      return deps.lead(term, warm);
    },
    onStoppedLeading: () => {
      metrics.leader.set(0);
      standby();
    },
  });
  const healths = [...warm].map(([name, w]) => [name, w.health] as [string, HealthSource]);
  try {
    if (config.metricsAddr) {
      listener = await serveMetrics({
        address: parseHostPort(config.metricsAddr)!,
        metrics,
        health: combinedHealth(healths),
        role: () => elector.isLeader ? "leader" : "standby",
        log: getLogger(["vkubelet", "metrics"]).with({ node: config.nodeName }),
      }, signal);
    }
    // Warm before ready: pinged, and the caches synced (they keep retrying until they are).
    const warmed = [...warm.values()].flatMap((w) => [w.health.ready, w.caches.synced]);
    await Promise.race([Promise.all(warmed), abortion(signal)]);
    if (signal.aborted) return;
    log.info("standing by as {identity} for lease {namespace}/{name}", {
      identity,
      namespace: config.leaderElectNamespace,
      name: leaseName,
    });
    deps.onReady?.();
    await elector.run(signal);
  } finally {
    stop.abort();
    await Promise.all([...running, listener?.done]);
    electorClient.close();
  }
}

/** A node's warm state: its health monitor and caches (not yet running), its fenced provider. */
function warmNode(node: StandbyNode, fence: LeadershipFence, clock: Clock) {
  const provider = fenceProvider(node.provider, fence);
  const log = getLogger(["vkubelet", "leader"]).with({ node: node.name });
  return {
    provider,
    health: new HealthMonitor({ provider, clock, log }),
    caches: new PodCaches({
      api: node.podApi,
      clock,
      log: getLogger(["vkubelet", "pods"]).with({ node: node.name }),
      nodeName: node.name,
      configSources: node.configSources,
    }),
  };
}

/** Resolves when `signal` aborts. */
function abortion(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
