/**
 * How a pod is named and marked in ECS: the task definition family, the tags that carry the
 * pod's identity (so a restarted vkubelet can adopt its tasks), and `startedBy`.
 * @module
 */
import type { Tag } from "@aws-sdk/client-ecs";
import { keyedPodTags, type PodTag, tagMap } from "../../provider/mod.ts";

/** Tag keys vkubelet puts on task definitions and tasks. */
export const TAGS = {
  namespace: "vkubelet.io/namespace",
  pod: "vkubelet.io/pod",
  uid: "vkubelet.io/uid",
  node: "vkubelet.io/node",
  /** On tasks only: how many restarts came before this task, so a restarted vkubelet keeps it. */
  restarts: "vkubelet.io/restarts",
  /** On tasks only: the pod's restart policy, for a pod adopted before the core hands it over. */
  restartPolicy: "vkubelet.io/restart-policy",
  /** On tasks only, `"true"` when the pod's Secret-sourced env is in its Secrets Manager secret. */
  secrets: "vkubelet.io/secrets",
} as const;

/** The awslogs stream prefix: streams are named `vk/<container>/<task id>`. */
export const LOG_STREAM_PREFIX = "vk";

/** A task definition family for the pod (letters, digits, `-` and `_`, at most 255). */
export function familyName(namespace: string, name: string): string {
  return `vk_${namespace}_${name}`.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 255);
}

/** `startedBy` of this node's tasks (at most 128 of letters, digits, `-`, `_` and `/`). */
export function startedBy(nodeName: string): string {
  return `vk/${nodeName}`.replace(/[^A-Za-z0-9_/-]/g, "-").slice(0, 128);
}

/** The pod's tag on its tasks (the run count too) and task definitions (without). */
const CARRIER = keyedPodTags({ ...TAGS, name: TAGS.pod, run: TAGS.restarts });

/** The pod's identity as ECS tags, after the user's tags from the config. */
export function podTags(
  pod: { namespace: string; name: string; uid: string },
  nodeName: string,
  extra: Record<string, string>,
): Tag[] {
  const { [TAGS.restarts]: _, ...identity } = CARRIER.write({ ...pod, node: nodeName, run: 0 });
  return Object.entries({ ...extra, ...identity }).map(([key, value]) => ({ key, value }));
}

/** A pod's identity as its task's tags carry it. */
export interface AdoptedIdentity extends PodTag {
  restartPolicy?: string;
  /** The pod has a secret in Secrets Manager, to delete with it. */
  secrets: boolean;
}

/** Reads the pod identity back from a task's tags; `undefined` if it is not one of ours. */
export function podOfTags(tags: Tag[] | undefined): AdoptedIdentity | undefined {
  const map = tagMap(tags);
  const id = CARRIER.read(map);
  return id &&
    { ...id, restartPolicy: map?.[TAGS.restartPolicy], secrets: map?.[TAGS.secrets] === "true" };
}

/** The last part of a task ARN (`arn:...:task/cluster/ID` → `ID`). */
export function taskId(taskArn: string): string {
  return taskArn.slice(taskArn.lastIndexOf("/") + 1);
}
