/**
 * The part of the Node most providers fill in from their config, written one way for all of
 * them. Conditions, nodeInfo and the core's own labels and taint stay the node controller's.
 * @module
 */
import type { Node, NodeAddress, NodeStatus, Taint } from "kubernetes-types/core/v1.d.ts";
import type { ProviderDeps } from "./contract.ts";

/** What a provider sets on its Node. */
export interface ProviderNodeFields {
  /** Merged over the labels already there. */
  labels?: Record<string, string>;
  /** Added; one with the same key and effect as an existing taint replaces it. */
  taints?: readonly Taint[];
  /** `spec.providerID`, e.g. the backend's ID of the node. */
  providerID?: string;
  /** Capacity, and allocatable too unless given apart. */
  capacity: Record<string, string>;
  /** What pods may use; default `capacity`. */
  allocatable?: Record<string, string>;
  /** Default: InternalIP (the node's IP) and Hostname (the node's name). */
  addresses?: readonly NodeAddress[];
}

/**
 * Writes `fields` and the kubelet port into `node`, keeping what is already there otherwise.
 *
 * @example Usage
 * ```ts
 * import { applyProviderNode } from "@vkubelet/vkubelet/provider";
 * import type { Node } from "kubernetes-types/core/v1.d.ts";
 * import assert from "node:assert/strict";
 * const node: Node = { metadata: { name: "vk-0" } };
 * applyProviderNode(node, { capacity: { cpu: "8", memory: "16Gi", pods: "110" } }, {
 *   nodeName: "vk-0",
 *   internalIp: "127.0.0.1",
 *   daemonPort: 10250,
 * });
 * assert.equal(node.status?.allocatable?.cpu, "8");
 * ```
 */
export function applyProviderNode(
  node: Node,
  fields: ProviderNodeFields,
  deps: Pick<ProviderDeps, "nodeName" | "internalIp" | "daemonPort">,
): void {
  node.metadata ??= {};
  node.metadata.labels = { ...node.metadata.labels, ...fields.labels };
  node.spec ??= {};
  const taints: Taint[] = [...(node.spec.taints ?? [])];
  for (const taint of fields.taints ?? []) {
    const same = taints.findIndex((t) => t.key === taint.key && t.effect === taint.effect);
    if (same >= 0) taints[same] = { ...taint };
    else taints.push({ ...taint });
  }
  if (taints.length > 0) node.spec.taints = taints;
  if (fields.providerID) node.spec.providerID = fields.providerID;
  // `status` is read-only in kubernetes-types (servers own it); configureNode fills it in.
  const status: NodeStatus = (node as { status?: NodeStatus }).status ??= {};
  status.capacity = { ...fields.capacity };
  status.allocatable = { ...(fields.allocatable ?? fields.capacity) };
  const addresses = fields.addresses ?? [
    { type: "InternalIP", address: deps.internalIp },
    { type: "Hostname", address: deps.nodeName },
  ];
  status.addresses = addresses.map((a) => ({ ...a }));
  status.daemonEndpoints = { kubeletEndpoint: { Port: deps.daemonPort } };
}
