/**
 * How a pod is named and marked in ECS: the task definition family, the tags that carry the
 * pod's identity (so a restarted vkubelet can adopt its tasks), and `startedBy`.
 * @module
 */
import type { Tag } from "@aws-sdk/client-ecs";

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

/** The pod's identity as ECS tags, after the user's tags from the config. */
export function podTags(
  pod: { namespace: string; name: string; uid: string },
  nodeName: string,
  extra: Record<string, string>,
): Tag[] {
  const tags: Record<string, string> = {
    ...extra,
    [TAGS.namespace]: pod.namespace,
    [TAGS.pod]: pod.name,
    [TAGS.uid]: pod.uid,
    [TAGS.node]: nodeName,
  };
  return Object.entries(tags).map(([key, value]) => ({ key, value }));
}

/** A pod's identity as its task's tags carry it. */
export interface AdoptedIdentity {
  namespace: string;
  name: string;
  uid: string;
  node: string;
  restarts: number;
  restartPolicy?: string;
  /** The pod has a secret in Secrets Manager, to delete with it. */
  secrets: boolean;
}

/** Reads the pod identity back from a task's tags; `undefined` if it is not one of ours. */
export function podOfTags(
  tags: Tag[] | undefined,
): AdoptedIdentity | undefined {
  const get = (key: string) => tags?.find((t) => t.key === key)?.value;
  const namespace = get(TAGS.namespace), name = get(TAGS.pod), uid = get(TAGS.uid);
  const node = get(TAGS.node);
  if (!namespace || !name || !uid || !node) return undefined;
  const restarts = Number(get(TAGS.restarts) ?? 0);
  return {
    namespace,
    name,
    uid,
    node,
    restarts: Number.isInteger(restarts) ? restarts : 0,
    restartPolicy: get(TAGS.restartPolicy),
    secrets: get(TAGS.secrets) === "true",
  };
}

/** The last part of a task ARN (`arn:...:task/cluster/ID` → `ID`). */
export function taskId(taskArn: string): string {
  return taskArn.slice(taskArn.lastIndexOf("/") + 1);
}
