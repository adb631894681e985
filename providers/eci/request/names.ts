/**
 * How a pod is named and marked in ECI: the container group's name, the tags that carry the
 * pod's identity (so a restarted vkubelet adopts its groups), and the create `ClientToken`.
 * @module
 */
import { keyedPodTags, type PodTag, tagMap } from "../../../provider/mod.ts";

/** Tag keys vkubelet puts on container groups. */
export const TAGS = {
  namespace: "vkubelet.io/namespace",
  pod: "vkubelet.io/pod",
  uid: "vkubelet.io/uid",
  node: "vkubelet.io/node",
  /** How many restarts came before the pod's group (adoption goes on counting from it). */
  restarts: "vkubelet.io/restarts",
  /** The count as earlier versions tagged it (the groups made again), read when `restarts` is not. */
  generation: "vkubelet.io/generation",
} as const;

/** An ECI tag. */
export interface EciTag {
  key?: string;
  value?: string;
}

/**
 * A group name for the pod: ECI wants 2–128 of lowercase letters, digits and `-`, starting and
 * ending with a letter or digit. The uid's head keeps two pods of one name apart.
 */
export function groupName(namespace: string, name: string, uid: string): string {
  const safe = `${namespace}-${name}`.toLowerCase().replace(/[^a-z0-9-]/g, "-").slice(0, 110);
  return `${safe}-${uid.slice(0, 8)}`.replace(/^-+/, "").replace(/-+$/, "").toLowerCase();
}

/** The create's idempotency token: the same pod and run (restarts before it) give the same. */
export function clientToken(uid: string, restarts: number): string {
  return `${uid}-${restarts}`.slice(0, 64);
}

/** The pod's tag on its group. */
const CARRIER = keyedPodTags({
  ...TAGS,
  name: TAGS.pod,
  run: TAGS.restarts,
  oldRun: [TAGS.generation],
});

/** The pod's identity as ECI tags, after the user's tags from the config. */
export function podTags(
  pod: { namespace: string; name: string; uid: string },
  nodeName: string,
  restarts: number,
  extra: Record<string, string>,
): EciTag[] {
  const tags = { ...extra, ...CARRIER.write({ ...pod, node: nodeName, run: restarts }) };
  return Object.entries(tags).map(([key, value]) => ({ key, value }));
}

/** Reads the pod identity back from a group's tags; `undefined` if it is not one of ours. */
export function podOfTags(tags: EciTag[] | undefined): PodTag | undefined {
  return CARRIER.read(tagMap(tags));
}
