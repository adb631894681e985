/**
 * The node side assembled from vkubelet's config: one call for `app/run.ts` that builds the
 * health monitor, node controller and lease controller with the config's option names mapped
 * onto theirs, and runs them together.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { Provider } from "../../provider/mod.ts";
import { HealthMonitor, type HealthSource } from "./health_monitor.ts";
import { LeaseController } from "./lease_controller.ts";
import type { CallSlots, NodeApi, NodeApiClient } from "./node_api.ts";
import { NodeController, type NodeControllerDeps } from "./node_controller.ts";

/**
 * The config fields the node side reads: the app's config satisfies it structurally, so the
 * node side does not import the app layer.
 */
export interface NodeSideConfig {
  nodeName: string;
  os: "linux" | "windows";
  nodeLabels: Readonly<Record<string, string>>;
  disableTaint: boolean;
  taintKey: string;
  taintValue: string;
  taintEffect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  /** `--register-with-taints`; default none. */
  registerWithTaints?: readonly {
    key: string;
    value?: string;
    effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  }[];
  nodeLeaseDurationSeconds: number;
  /** Milliseconds. */
  nodeLeaseRenewInterval: number;
  /** Milliseconds. */
  nodeStatusUpdateFrequency: number;
  /** Milliseconds. */
  nodeStatusReportFrequency: number;
  recreateNode: boolean;
  cordonOnShutdown: boolean;
  port: number;
  /**
   * Milliseconds a failing ping leaves the node Ready, tainted and `ProviderReachable=False`
   * (`--provider-outage-grace`); default 0, Ready False at once.
   */
  providerOutageGrace?: number;
}

/** What {@link createNodeSide} needs besides the config. */
export interface NodeSideDeps {
  /** The API, or a `KubeClient` to adapt. */
  api?: NodeApi;
  client?: NodeApiClient;
  provider: Pick<Provider, "configureNode" | "notifyNodeChanged" | "ping" | "observeNode">;
  clock: Clock;
  log: Logger;
  /** The node's InternalIP (`--node-ip`, or detected). */
  internalIp: string;
  /** vkubelet's version, for `nodeInfo.kubeletVersion`. */
  version: string;
  /** The `Hostname` address and `kubernetes.io/hostname` label; default the node name. */
  hostname?: string;
  /** `status.declaredFeatures` (see {@link NodeTemplateOptions.declaredFeatures}). */
  declaredFeatures?: string[];
  /** Told how long each lease renewal took and whether it worked; for metrics. */
  onLeaseRenewal?: (seconds: number, ok: boolean) => void;
  /** Where in the renew interval the lease's renewals fall (see `LeaseControllerDeps.phase`). */
  leasePhase?: number;
  /** Turns shared with other nodes' calls (see {@link CallSlots}); leases go first. */
  slots?: CallSlots;
  /**
   * The provider's health from a monitor someone else runs (a `--leader-elect` standby's, which
   * has pinged already); default a monitor of the node side's own, run by `run`.
   */
  health?: HealthSource;
}

/** The three parts, and one `run` for all of them. */
export interface NodeSide {
  health: HealthSource;
  node: NodeController;
  lease: LeaseController;
  /** Resolves once the Node is registered with our status (the node controller's `ready`). */
  ready: Promise<void>;
  /** Runs all three until `signal` aborts; resolves when all have stopped. */
  run(signal: AbortSignal): Promise<void>;
}

/** The {@link NodeControllerDeps} options the config sets. */
export function nodeOptionsFromConfig(
  config: NodeSideConfig,
): Omit<NodeControllerDeps, "api" | "client" | "provider" | "clock" | "log" | "version"> {
  return {
    nodeName: config.nodeName,
    os: config.os,
    labels: config.nodeLabels,
    taint: config.disableTaint
      ? false
      : { key: config.taintKey, value: config.taintValue, effect: config.taintEffect },
    extraTaints: config.registerWithTaints?.map((t) => ({ ...t })),
    kubeletPort: config.port,
    statusUpdateIntervalMs: config.nodeStatusUpdateFrequency,
    statusReportIntervalMs: config.nodeStatusReportFrequency,
    recreateNode: config.recreateNode,
    cordonOnShutdown: config.cordonOnShutdown,
    outageGraceMs: config.providerOutageGrace ?? 0,
  };
}

/** Builds the node side from the config; nothing talks to the API until `run`. */
export function createNodeSide(config: NodeSideConfig, deps: NodeSideDeps): NodeSide {
  const { api, client, provider, clock, log } = deps;
  const own = deps.health ? undefined : new HealthMonitor({ provider, clock, log });
  const health = deps.health ?? own!;
  const node = new NodeController({
    ...nodeOptionsFromConfig(config),
    api,
    client,
    provider,
    clock,
    log,
    health,
    version: deps.version,
    internalIp: deps.internalIp,
    hostname: deps.hostname,
    declaredFeatures: deps.declaredFeatures,
    slots: deps.slots,
  });
  const lease = new LeaseController({
    api,
    client,
    clock,
    log,
    health,
    nodeName: config.nodeName,
    owner: node,
    leaseDurationSeconds: config.nodeLeaseDurationSeconds,
    renewIntervalMs: config.nodeLeaseRenewInterval,
    onRenewal: deps.onLeaseRenewal,
    phase: deps.leasePhase,
    slots: deps.slots,
    outageGraceMs: config.providerOutageGrace ?? 0,
  });
  return {
    health,
    node,
    lease,
    ready: node.ready,
    async run(signal) {
      await Promise.all([own?.run(signal), node.run(signal), lease.run(signal)]);
    },
  };
}
