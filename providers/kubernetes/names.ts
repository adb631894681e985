/**
 * How objects of cluster A are named and marked in cluster B. Every forwarded object lives in
 * one namespace of B, named `<namespace-in-A>.<name>`: namespaces cannot hold a dot, so the
 * name is unique and reads back unambiguously. Labels say which virtual node owns the copy (so
 * that several virtual nodes can share B's namespace) and which upstream object it mirrors, by
 * uid for pods.
 * @module
 */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";

/** Labels and annotations on the objects the provider creates in B. */
export const MARKS = {
  /** Label: the virtual node that forwarded the object. */
  node: "vkubelet.io/virtual-node",
  /** Label: the upstream namespace. */
  namespace: "vkubelet.io/upstream-namespace",
  /** Label: the upstream pod's uid; exactly one upstream pod per downstream pod. */
  uid: "vkubelet.io/upstream-uid",
  /** Annotation: the upstream object's name (names may be longer than a label value). */
  name: "vkubelet.io/upstream-name",
  /** Label: what a copied ConfigMap or Secret is for (`dependency` or `token`). */
  role: "vkubelet.io/role",
} as const;

/** Annotations of the upstream pod aiming it at nodes of B (tensile-kube's approach). */
export const AIM = {
  /** A JSON object of node labels, added to the pod's nodeSelector in B. */
  nodeSelector: "vkubelet.io/downstream-node-selector",
  /** A JSON `Affinity` (node, pod, anti) for the pod in B. */
  affinity: "vkubelet.io/downstream-affinity",
} as const;

const MAX_NAME = 253;

/** The name in B of the object `namespace/name` of A. */
export function downstreamName(namespace: string, name: string): string {
  const full = `${namespace}.${name}`;
  if (full.length <= MAX_NAME) return full;
  // Keep it unique and deterministic when too long: cut and add a hash of the whole.
  return `${full.slice(0, MAX_NAME - 9)}-${fnv1a(full)}`;
}

/** Labels that mark a downstream object as the copy of `namespace/name` for `node`. */
export function markLabels(node: string, namespace: string, uid?: string): Record<string, string> {
  return {
    [MARKS.node]: labelValue(node),
    [MARKS.namespace]: namespace,
    ...(uid ? { [MARKS.uid]: uid } : {}),
  };
}

/** The label selector of every pod in B that `node` forwarded. */
export function nodeSelector(node: string): string {
  return `${MARKS.node}=${labelValue(node)}`;
}

/** The upstream `namespace/name/uid` a downstream object mirrors, if it carries the marks. */
export function upstreamOf(
  meta: ObjectMeta | undefined,
): { namespace: string; name: string; uid?: string } | undefined {
  const namespace = meta?.labels?.[MARKS.namespace];
  const name = meta?.annotations?.[MARKS.name];
  if (!namespace || !name) return undefined;
  return { namespace, name, uid: meta?.labels?.[MARKS.uid] };
}

/** A label value (at most 63 characters) standing for `text`. */
function labelValue(text: string): string {
  return text.length <= 63 ? text : `${text.slice(0, 54)}-${fnv1a(text)}`;
}

/** 8 hex digits of FNV-1a: short, stable, good enough to tell long names apart. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}
