/**
 * vkubelet under `--leader-elect` (issue 21): several replicas of one node, one leader. Every
 * replica is a warm standby — config validated, provider loaded and pinged, the cluster client
 * connected, this node's pods, the Services and the pods' ConfigMaps and Secrets cached and
 * synced ({@link PodCaches}), `/healthz` and `/metrics` served — and campaigns for the Lease
 * `<namespace>/vkubelet-<node>` ({@link LeaderElector}). Only while it leads does it run the
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
import { PodCaches } from "../core/pods/mod.ts";
import type { VkubeletMetrics } from "../core/metrics.ts";
import type { Config } from "./config/config.ts";
import { parseHostPort } from "./config/schema.ts";
import { type MetricsListener, serveMetrics } from "./metrics_server.ts";
import { LeaderElector, type LeadershipFence } from "../k8s/leader_election/mod.ts";
import { fenceProvider } from "./fenced_provider.ts";

/** What a standby keeps warm for its terms: read-only, run for the whole process. */
export interface WarmStandby {
  /** This node's pods, the Services, the pods' ConfigMaps and Secrets; synced. */
  caches: PodCaches;
  /** The provider's health, pinged already. */
  health: HealthSource;
}

/** What {@link runLeaderElected} needs. */
export interface LeaderElectedDeps {
  /** Aborts on SIGINT/SIGTERM: the leader releases the lease, and the replica exits. */
  signal: AbortSignal;
  clock: Clock;
  /** The replica's client, its writes guarded by `fence` (`beforeSend`). */
  kube: KubeClient;
  provider: Provider;
  fence: LeadershipFence;
  metrics: VkubeletMetrics;
  /** Runs the writers with `provider`, from `warm`, until `signal` aborts; then drains them. */
  lead(signal: AbortSignal, provider: Provider, warm: WarmStandby): Promise<void>;
  /** Called once the standby is warm. */
  onReady?(): void;
  /** `holderIdentity`; default `$POD_NAME` or `$HOSTNAME` plus a random suffix. */
  identity?: string;
}

/** The leader election Lease's name for a node. */
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
  const log = getLogger(["vkubelet", "leader"]).with({ node: config.nodeName });
  const identity = deps.identity ?? defaultIdentity();
  const provider = fenceProvider(deps.provider, fence);
  metrics.leader.set(0);
  // The standby's view of the provider (/healthz) and its caches, handed to each term.
  const health = new HealthMonitor({ provider, clock, log });
  const healthDone = health.run(signal);
  const caches = new PodCaches({
    api: kube,
    clock,
    log: getLogger(["vkubelet", "pods"]).with({ node: config.nodeName }),
    nodeName: config.nodeName,
  });
  const cachesDone = caches.run(signal);
  // A replica that never led keeps nothing current in the provider's name either.
  deps.provider.standby?.();
  let listener: MetricsListener | undefined;
  // Lease requests on a client of their own: never queued behind pod status writes.
  const electorClient = new KubeClient(kube.config, { clock, qps: 0, retry: { maxRetries: 0 } });
  const elector = new LeaderElector({
    leases: electorClient.leases,
    clock,
    log,
    fence,
    namespace: config.leaderElectNamespace,
    name: leaderLeaseName(config.nodeName),
    identity,
    leaseDurationMs: config.leaderElectLeaseDuration,
    renewDeadlineMs: config.leaderElectRenewDeadline,
    retryPeriodMs: config.leaderElectRetryPeriod,
    onStartedLeading: (term) => {
      metrics.leader.set(1);
      deps.provider.resume?.(caches.pods.store.list());
      return deps.lead(term, provider, { caches, health });
    },
    onStoppedLeading: () => {
      metrics.leader.set(0);
      deps.provider.standby?.();
    },
  });
  try {
    if (config.metricsAddr) {
      listener = await serveMetrics({
        address: parseHostPort(config.metricsAddr)!,
        metrics,
        health,
        role: () => elector.isLeader ? "leader" : "standby",
        log: getLogger(["vkubelet", "metrics"]).with({ node: config.nodeName }),
      }, signal);
    }
    // Warm before ready: pinged, and the caches synced (they keep retrying until they are).
    await Promise.race([Promise.all([health.ready, caches.synced]), abortion(signal)]);
    if (signal.aborted) return;
    log.info("standing by as {identity} for lease {namespace}/{name}", {
      identity,
      namespace: config.leaderElectNamespace,
      name: leaderLeaseName(config.nodeName),
    });
    deps.onReady?.();
    await elector.run(signal);
  } finally {
    stop.abort();
    await Promise.all([healthDone, cachesDone, listener?.done]);
    electorClient.close();
  }
}

/** Resolves when `signal` aborts. */
function abortion(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
