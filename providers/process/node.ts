/**
 * The process provider's part of the Node: capacity and allocatable (the host's CPUs and
 * memory unless the config says otherwise), addresses, labels, taints and the kubelet port.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { applyProviderNode, type ProviderDeps } from "../../provider/mod.ts";
import type { ProcessConfig } from "./config.ts";
import { memInfo } from "./host/proc.ts";

/** The node's capacity: the config's figures over the host's. */
export function nodeCapacity(config: ProcessConfig): Record<string, string> {
  let memory = "0";
  try {
    memory = String(memInfo().MemTotal ?? 0);
  } catch {
    // no /proc/meminfo: leave it to the config
  }
  return {
    cpu: String(navigator.hardwareConcurrency || 1),
    memory,
    pods: "110",
    ...config.capacity,
  };
}

/** Writes the provider's node fields into `node`. */
export function configureProcessNode(
  node: Node,
  config: ProcessConfig,
  capacity: Record<string, string>,
  deps: Pick<ProviderDeps, "nodeName" | "internalIp" | "daemonPort">,
): void {
  applyProviderNode(node, { labels: config.labels, taints: config.taints, capacity }, deps);
}
