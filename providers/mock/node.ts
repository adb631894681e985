/**
 * The mock's part of the Node: capacity and allocatable, addresses, labels, taints, providerID
 * and the kubelet port, from the mock's config. Conditions, nodeInfo and the core's own labels
 * and taint are the node controller's.
 * @module
 */
import type { Node, NodeAddress, NodeStatus, Taint } from "kubernetes-types/core/v1.d.ts";
import type { ProviderDeps } from "../../lib/provider.ts";
import type { MockConfig } from "./config.ts";

/** Writes the mock's node fields into `node`, keeping what is already there otherwise. */
export function configureMockNode(
  node: Node,
  config: MockConfig,
  deps: Pick<ProviderDeps, "nodeName" | "internalIp" | "daemonPort">,
): void {
  node.metadata ??= {};
  node.metadata.labels = { ...node.metadata.labels, ...config.labels };
  node.spec ??= {};
  const taints: Taint[] = [...(node.spec.taints ?? [])];
  for (const taint of config.taints) {
    const same = taints.findIndex((t) => t.key === taint.key && t.effect === taint.effect);
    if (same >= 0) taints[same] = { ...taint };
    else taints.push({ ...taint });
  }
  if (taints.length > 0) node.spec.taints = taints;
  if (config.providerID) node.spec.providerID = config.providerID;
  // `status` is read-only in kubernetes-types (servers own it); configureNode fills it in.
  const status: NodeStatus = (node as { status?: NodeStatus }).status ??= {};
  status.capacity = { ...config.capacity };
  status.allocatable = { ...config.capacity };
  const addresses: NodeAddress[] = config.addresses ?? [
    { type: "InternalIP", address: deps.internalIp },
    { type: "Hostname", address: deps.nodeName },
  ];
  status.addresses = addresses.map((a) => ({ ...a }));
  status.daemonEndpoints = { kubeletEndpoint: { Port: deps.daemonPort } };
}
