/**
 * Whether one of cluster B's selected nodes can take a pod now, checked before the pod is
 * accepted: capacity is a sum over B's nodes, so a pod can fit the sum and no single node, and
 * would hang Pending in B (liqo#2712). Per node, as B's scheduler filters
 * (kubernetes/kubernetes pkg/scheduler/framework/plugins: `noderesources` Fit,
 * `tainttoleration`, `nodeaffinity`) and the kubelet admits (pkg/kubelet/lifecycle/predicate.go):
 * Ready and schedulable, the pod's nodeSelector and required node affinity, NoSchedule/NoExecute
 * taints tolerated, and allocatable minus the requests of the pods bound to it covering the
 * pod's requests. Host ports, pod (anti-)affinity and volumes are left to B's scheduler; a pod
 * they keep Pending is failed after `unschedulableTimeout` (see `../status/unschedulable.ts`).
 * @module
 */
import type {
  Node,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  Pod,
  Taint,
  Toleration,
} from "kubernetes-types/core/v1.d.ts";
import { isUsableNode, podRequests } from "./capacity.ts";
import { isTerminalPhase, quantityToNumber } from "../../../provider/mod.ts";

/** The answer: fits, or why not per reason with the number of nodes, as B's scheduler says it. */
export type Fit = { ok: true; node: string } | { ok: false; message: string };

/** Whether the downstream `pod` fits one of `nodes`, given the non-terminated `pods` of B. */
export function fitOnSomeNode(pod: Pod, nodes: Iterable<Node>, pods: Iterable<Pod>): Fit {
  const used = new Map<string, Record<string, number>>();
  for (const p of pods) {
    const node = p.spec?.nodeName;
    if (!node || isTerminalPhase(p.status?.phase)) continue;
    if (
      p.metadata?.name === pod.metadata?.name && p.metadata?.namespace === pod.metadata?.namespace
    ) {
      continue; // the pod itself, on a retry
    }
    const sum = used.get(node) ?? {};
    for (const [name, v] of Object.entries(podRequests(p))) sum[name] = (sum[name] ?? 0) + v;
    used.set(node, sum);
  }
  const wanted = podRequests(pod);
  const reasons = new Map<string, number>();
  let count = 0;
  for (const node of nodes) {
    count++;
    const why = unfitReason(pod, node, wanted, used.get(node.metadata?.name ?? "") ?? {});
    if (!why) return { ok: true, node: node.metadata?.name ?? "" };
    reasons.set(why, (reasons.get(why) ?? 0) + 1);
  }
  const detail = [...reasons].map(([why, n]) => `${n} ${why}`).sort().join(", ");
  return {
    ok: false,
    message: `0/${count} nodes of the downstream cluster are available${
      detail ? `: ${detail}` : ""
    }`,
  };
}

function unfitReason(
  pod: Pod,
  node: Node,
  wanted: Record<string, number>,
  used: Record<string, number>,
): string | undefined {
  if (!isUsableNode(node)) return "node(s) were not Ready or unschedulable";
  const labels = node.metadata?.labels ?? {};
  const selector = pod.spec?.nodeSelector ?? {};
  if (Object.entries(selector).some(([k, v]) => labels[k] !== v)) {
    return "node(s) didn't match Pod's node affinity/selector";
  }
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms;
  if (terms?.length && !terms.some((t) => termMatches(t, labels, node.metadata?.name ?? ""))) {
    return "node(s) didn't match Pod's node affinity/selector";
  }
  const taint = (node.spec?.taints ?? []).find((t) =>
    t.effect !== "PreferNoSchedule" && !(pod.spec?.tolerations ?? []).some((x) => tolerates(x, t))
  );
  if (taint) {
    return `node(s) had untolerated taint {${taint.key}: ${taint.value ?? ""}}`;
  }
  const allocatable = node.status?.allocatable ?? {};
  for (const [name, need] of Object.entries(wanted)) {
    if (need === 0) continue;
    const have = quantityToNumber(allocatable[name] ?? "0") ?? 0;
    if (need > have - (used[name] ?? 0)) {
      return name === "pods" ? "Too many pods" : `Insufficient ${name}`;
    }
  }
  return undefined;
}

/** k8s.io/component-helpers/scheduling/corev1 `ToleratesTaint`, in short. */
function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (!t.key && t.operator !== "Exists") return false;
  if (t.operator === "Exists") return true;
  return (t.value ?? "") === (taint.value ?? "");
}

/** One nodeSelectorTerm: every expression and field matches (component-helpers nodeaffinity). */
export function termMatches(
  term: NodeSelectorTerm,
  labels: Record<string, string>,
  nodeName: string,
): boolean {
  if (!term.matchExpressions?.length && !term.matchFields?.length) return false;
  const fields = { "metadata.name": nodeName };
  return (term.matchExpressions ?? []).every((r) => requirementMatches(r, labels)) &&
    (term.matchFields ?? []).every((r) => requirementMatches(r, fields));
}

function requirementMatches(r: NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case "In":
      return has && values.includes(value);
    case "NotIn":
      return !has || !values.includes(value);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "Gt":
    case "Lt": {
      const [a, b] = [Number(value), Number(values[0])];
      if (!has || !Number.isInteger(a) || !Number.isInteger(b)) return false;
      return r.operator === "Gt" ? a > b : a < b;
    }
  }
  return false;
}
