/**
 * The virtual node's capacity: the allocatable of cluster B's selected nodes (Ready and
 * schedulable) minus what B's own pods on them request — every pod but the ones this virtual
 * node forwarded, which A already counts. Kept current from two informers of B (nodes by the
 * config's selector, non-terminated pods everywhere), as tensile-kube does
 * (virtual-kubelet/tensile-kube pkg/provider/provider.go `updateVKCapacityFromNode/Pod`).
 * @module
 */
import type { Container, Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { isSidecar, isTerminalPhase, quantityToNumber } from "../../../provider/mod.ts";

/** Resources by name, as numbers (cpu in cores, memory in bytes, pods as a count). */
export type Amounts = Record<string, number>;

/** True for a node that can take pods now. */
export function isUsableNode(node: Node): boolean {
  if (node.spec?.unschedulable) return false;
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  return ready?.status === "True";
}

/** What a pod asks of its node: containers summed, init containers at their peak, plus overhead. */
export function podRequests(pod: Pod): Amounts {
  const sum: Amounts = {};
  const add = (into: Amounts, c: Container) => {
    for (const [name, q] of Object.entries(c.resources?.requests ?? {})) {
      into[name] = (into[name] ?? 0) + (quantityToNumber(q) ?? 0);
    }
  };
  for (const c of pod.spec?.containers ?? []) add(sum, c);
  for (const c of pod.spec?.initContainers ?? []) {
    // Sidecars (restartPolicy Always) run alongside; plain init containers one at a time.
    if (isSidecar(c)) add(sum, c);
    else {
      const one: Amounts = {};
      add(one, c);
      for (const [name, v] of Object.entries(one)) sum[name] = Math.max(sum[name] ?? 0, v);
    }
  }
  for (const [name, q] of Object.entries(pod.spec?.overhead ?? {})) {
    sum[name] = (sum[name] ?? 0) + (quantityToNumber(q) ?? 0);
  }
  sum.pods = (sum.pods ?? 0) + 1;
  return sum;
}

/**
 * Allocatable of the usable `nodes` minus the requests of the `pods` bound to them for which
 * `isForeign` is true (B's own pods); never below zero.
 */
export function freeCapacity(
  nodes: Iterable<Node>,
  pods: Iterable<Pod>,
  isForeign: (pod: Pod) => boolean,
): Amounts {
  const free: Amounts = { cpu: 0, memory: 0, pods: 0 };
  const usable = new Set<string>();
  for (const node of nodes) {
    if (!isUsableNode(node)) continue;
    usable.add(node.metadata?.name ?? "");
    for (const [name, q] of Object.entries(node.status?.allocatable ?? {})) {
      free[name] = (free[name] ?? 0) + (quantityToNumber(q) ?? 0);
    }
  }
  for (const pod of pods) {
    if (!usable.has(pod.spec?.nodeName ?? "") || !isForeign(pod)) continue;
    if (isTerminalPhase(pod.status?.phase)) continue;
    for (const [name, v] of Object.entries(podRequests(pod))) {
      if (name in free) free[name] -= v;
    }
  }
  for (const name of Object.keys(free)) free[name] = Math.max(0, free[name]);
  return free;
}

/** Amounts as Node quantities: cpu in millicores, the rest as whole numbers. */
export function toQuantities(amounts: Amounts): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(amounts)) {
    out[name] = name === "cpu" ? `${Math.floor(v * 1000 + 1e-6)}m` : String(Math.floor(v));
  }
  return out;
}
