/**
 * The mock's part of the Node: capacity and allocatable, addresses, labels, taints, providerID
 * and the kubelet port, from the mock's config. Conditions, nodeInfo and the core's own labels
 * and taint are the node controller's.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { applyProviderNode, type ProviderDeps } from "../../provider/mod.ts";
import type { MockConfig } from "./config.ts";

/** Writes the mock's node fields into `node`, keeping what is already there otherwise. */
export function configureMockNode(
  node: Node,
  config: MockConfig,
  deps: Pick<ProviderDeps, "nodeName" | "internalIp" | "daemonPort">,
): void {
  applyProviderNode(node, {
    labels: config.labels,
    taints: config.taints,
    providerID: config.providerID,
    capacity: config.capacity,
    addresses: config.addresses,
  }, deps);
}
