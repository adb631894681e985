/**
 * The process provider's part of the Node: capacity and allocatable (the host's CPUs and
 * memory unless the config says otherwise), addresses, labels, taints, the kubelet port, and the
 * `vkubelet.io/ContainerIsolation` condition (whether containers get their own view, and if not,
 * that pods are refused or that the config turned isolation off).
 * @module
 */
import type { Node, NodeStatus } from "kubernetes-types/core/v1.d.ts";
import { applyProviderNode, type ProviderDeps } from "../../provider/mod.ts";
import type { ProcessConfig } from "./config.ts";
import { memInfo } from "./host/proc.ts";
import { isolationCondition } from "./lifecycle/pod_conditions.ts";

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
  mountNamespace: { ok: boolean; reason?: string },
): void {
  applyProviderNode(node, { labels: config.labels, taints: config.taints, capacity }, deps);
  // `status` is read-only in kubernetes-types; applyProviderNode has made it.
  const status = (node as { status: NodeStatus }).status;
  status.conditions = [
    ...(status.conditions ?? []),
    isolationCondition({ config, mountNamespace }),
  ];
}
