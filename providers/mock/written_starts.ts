/**
 * The start times a pod's written status holds, so that the mock, handed a pod again after a
 * vkubelet restart, reports the `startedAt` and `startTime` it reported before (a kubelet restart
 * leaves running containers and their start times alone).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";

/** Per running container its start and restart count; the pod's start time. */
export interface WrittenStarts {
  podStartMs?: number;
  containers: Map<string, { startedAtMs: number; restartCount: number }>;
}

/** What `pod.status` says about when the pod and its running containers started. */
export function writtenStarts(pod: Pod): WrittenStarts {
  const containers = new Map<string, { startedAtMs: number; restartCount: number }>();
  const statuses = [
    ...pod.status?.containerStatuses ?? [],
    ...pod.status?.initContainerStatuses ?? [],
  ];
  for (const status of statuses) {
    const startedAtMs = Date.parse(status.state?.running?.startedAt ?? "");
    if (Number.isFinite(startedAtMs)) {
      containers.set(status.name, { startedAtMs, restartCount: status.restartCount ?? 0 });
    }
  }
  const podStartMs = Date.parse(pod.status?.startTime ?? "");
  return { podStartMs: Number.isFinite(podStartMs) ? podStartMs : undefined, containers };
}
