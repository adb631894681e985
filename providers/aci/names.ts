/**
 * How a pod is named in Azure: its container group's name (from node, namespace and pod name, so
 * the same pod always maps to the same group and a retried create cannot make a second one) and
 * the tags that identify node, namespace, pod and UID, by which a restarted vkubelet finds its
 * groups again. ARM refuses `/` in tag names, hence `vkubelet-*` rather than `vkubelet.io/*`.
 * @module
 */
import { keyedPodTags, type PodTag } from "../../provider/mod.ts";

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

/** The pod's tag on its group. */
const CARRIER = keyedPodTags({ ...TAGS, name: TAGS.pod, run: TAGS.restarts });

/** The identifying tags of a pod's group, with the operator's tags. */
export function groupTags(
  pod: { namespace: string; name: string; uid: string },
  nodeName: string,
  restarts: number,
  extra: Record<string, string>,
): Record<string, string> {
  return { ...extra, ...CARRIER.write({ ...pod, node: nodeName, run: restarts }) };
}

/** Who a group belongs to, from its tags; `undefined` for a group vkubelet did not make. */
export function podOfTags(tags: Record<string, string> | undefined): PodTag | undefined {
  return CARRIER.read(tags);
}
