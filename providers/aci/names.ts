/**
 * How a pod is named in Azure: its container group's name (from node, namespace and pod name, so
 * the same pod always maps to the same group and a retried create cannot make a second one) and
 * the tags that identify node, namespace, pod and UID, by which a restarted vkubelet finds its
 * groups again. ARM refuses `/` in tag names, hence `vkubelet-*` rather than `vkubelet.io/*`.
 * @module
 */

/** The tag names vkubelet sets on every container group. */
export const TAGS = {
  node: "vkubelet-node",
  namespace: "vkubelet-namespace",
  pod: "vkubelet-pod",
  uid: "vkubelet-uid",
  /** Restarts before the current group (a group deleted behind our back and made again). */
  restarts: "vkubelet-restarts",
} as const;

/** FNV-1a, 32 bits, as 8 hex digits: a short stable suffix. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/**
 * The container group's name: `<namespace>-<pod>` cut to fit, then `-` and a hash of node,
 * namespace and pod (lowercase letters, digits and dashes, at most 63 characters, as ACI wants).
 */
export function groupName(nodeName: string, namespace: string, name: string): string {
  const base = `${namespace}-${name}`.toLowerCase().replace(/[^a-z0-9-]/g, "-").slice(0, 54)
    .replace(/^-+|-+$/g, "");
  return `${base || "pod"}-${fnv1a(`${nodeName}/${namespace}/${name}`)}`;
}

/** The identifying tags of a pod's group, with the operator's tags. */
export function groupTags(
  pod: { namespace: string; name: string; uid: string },
  nodeName: string,
  restarts: number,
  extra: Record<string, string>,
): Record<string, string> {
  return {
    ...extra,
    [TAGS.node]: nodeName,
    [TAGS.namespace]: pod.namespace,
    [TAGS.pod]: pod.name,
    [TAGS.uid]: pod.uid,
    [TAGS.restarts]: String(restarts),
  };
}

/** Who a group belongs to, from its tags; `undefined` for a group vkubelet did not make. */
export function podOfTags(
  tags: Record<string, string> | undefined,
): { node: string; namespace: string; name: string; uid: string; restarts: number } | undefined {
  const node = tags?.[TAGS.node];
  const namespace = tags?.[TAGS.namespace];
  const name = tags?.[TAGS.pod];
  const uid = tags?.[TAGS.uid];
  if (!node || !namespace || !name || !uid) return undefined;
  return { node, namespace, name, uid, restarts: Number(tags?.[TAGS.restarts]) || 0 };
}
