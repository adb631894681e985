/**
 * One virtual node's controllers, wired the same way wherever a node is served: the node side
 * (registration, status, Lease, provider health) and the pod controller, with their logs named
 * by node and their latencies counted in the process's metrics. `node_set.ts` wires each node of
 * its set here (one node is a set of one), and a `--leader-elect` term its nodes again on each
 * term; what differs between them (shared caches and clocks, a standby's warm state) comes in
 * as deps.
 * @module
 */
import type { Clock } from "../base/clock.ts";
import { getLogger } from "../base/log.ts";
import type { Provider } from "../provider/mod.ts";
import { createNodeSide, type NodeSide, type NodeSideDeps } from "../core/node/mod.ts";
import { PodController, type PodControllerDeps } from "../core/pods/mod.ts";
import type { VkubeletMetrics } from "../core/metrics.ts";
import { declaredFeatures } from "../core/kubelet_api/streaming/mod.ts";
import type { Config } from "./config/config.ts";
import denoJson from "../deno.json" with { type: "json" };
import type { Tracer } from "../core/tracing.ts";
import { podControllerHooks } from "./observe.ts";

/** What differs between the places a node is served; everything else comes from the config. */
export interface WireNodeDeps {
  /** The node's status and Lease go through it: a client of their own, or a node API on one. */
  heartbeat: Pick<NodeSideDeps, "api" | "client">;
  /** The pod controller's calls and informers (shared views under `--nodes`). */
  podApi: PodControllerDeps["api"];
  provider: Provider;
  clock: Clock;
  metrics: VkubeletMetrics;
  /** The node's InternalIP. */
  internalIp: string;
  /** The node side's extras (`--nodes`: renewal phase and shared call slots; a standby's health). */
  side?: Pick<NodeSideDeps, "leasePhase" | "slots" | "health">;
  /** The pod controller's extras (a standby's warm caches; shared watches and event counts). */
  pods?: Pick<PodControllerDeps, "caches" | "configSources" | "onUnsentEvents" | "recorder">;
  /** Spans for the node's pod syncs; none when tracing is off. */
  tracer?: Tracer;
}

/** A node's two controllers, not yet running. */
export interface WiredNode {
  side: NodeSide;
  pods: PodController;
}

/** Wires the node `config.nodeName` (its labels from `config.nodeLabels`). */
export function wireNode(config: Config, deps: WireNodeDeps): WiredNode {
  const { provider, clock, metrics, internalIp } = deps;
  const log = (part: string) => getLogger(["vkubelet", part]).with({ node: config.nodeName });
  const side = createNodeSide(config, {
    ...deps.heartbeat,
    ...deps.side,
    provider,
    clock,
    log: log("node"),
    internalIp,
    version: denoJson.version,
    // The kubelet API speaks WebSocket v5 too, so the apiserver need not translate to SPDY.
    declaredFeatures: declaredFeatures(),
    onLeaseRenewal: (seconds, ok) =>
      metrics.leaseRenewalLatency.observe({ result: ok ? "success" : "error" }, seconds),
  });
  const pods = new PodController({
    ...deps.pods,
    api: deps.podApi,
    provider,
    clock,
    log: log("pods"),
    nodeName: config.nodeName,
    workers: config.podSyncWorkers,
    resyncPeriodMs: config.fullResyncPeriod,
    daemonSetPods: config.daemonSetPods,
    onSync: (seconds, ok) =>
      metrics.syncLatency.observe({ result: ok ? "success" : "error" }, seconds),
    nodeIps: () => [internalIp],
    allocatable: () => side.node.node?.status?.allocatable ?? {},
    reachability: side.health,
    ...podControllerHooks(metrics, deps.tracer),
  });
  return { side, pods };
}
