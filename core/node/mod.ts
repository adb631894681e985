/**
 * The node side of vkubelet: the Node object, its status, its lease and the provider's health.
 *
 * Three long-lived parts, each with `run(signal)` and a `ready` promise, wired together by
 * plain objects rather than imports between them:
 *
 * - {@link HealthMonitor} pings the provider every 10 s and remembers the answer;
 * - {@link NodeController} creates or adopts the Node and keeps its status (labels, capacity,
 *   conditions, addresses...) true, writing only what changed, keeping what other writers own;
 * - {@link LeaseController} renews `kube-node-lease/<node>` every 10 s while the provider is
 *   healthy, or unhealthy for less than `--provider-outage-grace` (`./outage.ts`: meanwhile the
 *   node stays Ready, tainted, with `ProviderReachable=False`).
 *
 * `app/wire_node.ts` builds all three from the config with {@link createNodeSide}:
 *
 * ```ts
 * const side = createNodeSide(config, { client, provider, clock, log, internalIp, version });
 * loops.push(side.run(signal));
 * await side.ready; // the Node exists, with our status
 * ```
 *
 * or by hand:
 *
 * ```ts
 * const health = new HealthMonitor({ provider, clock, log });
 * const node = new NodeController({ client, provider, clock, log, health, nodeName, version });
 * const lease = new LeaseController({ client, clock, log, health, nodeName, owner: node });
 * await Promise.all([health.run(signal), node.run(signal), lease.run(signal)]);
 * ```
 * @module
 */
export * from "./health_monitor.ts";
export * from "./node_controller.ts";
export * from "./lease_controller.ts";
export * from "./node_api.ts";
export * from "./node_side.ts";
export {
  baseNode,
  DEFAULT_CAPACITY,
  desiredNode,
  goArch,
  kubeletVersion,
  KUBERNETES_VERSION,
  NODE_CONDITION_TYPES,
  type NodeTaintOptions,
  type NodeTemplateOptions,
  PING_FAILED_REASON,
} from "./node_template.ts";
export { OWNED_KEYS_ANNOTATION } from "./node_status.ts";
export { CORDONED_ANNOTATION } from "./cordon.ts";
export { OUTAGE_CORDON_ANNOTATION, PROVIDER_REACHABLE, UNREACHABLE_TAINT } from "./outage.ts";
export { forbiddenLabels } from "./forbidden_labels.ts";
