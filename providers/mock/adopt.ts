/**
 * Adoption for the mock under `--leader-elect`: a new leader's mock has never seen the pods the
 * old leader's mock ran, so its `createPod` takes what the written status says about them — pod
 * IP, start time, each running container's start and restart count — instead of starting them
 * afresh. A takeover then changes no IP, restarts no container and writes the same status
 * again, as the kubelet does after a restart when its runtime still runs the containers.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";

/** A container run the status reports as running. */
export interface AdoptedRun {
  startedAtMs: number;
  restartCount: number;
}

/** What a pod's status says about a run of it elsewhere; empty for a new pod. */
export interface Adopted {
  podIp?: string;
  startMs?: number;
  runs: Map<string, AdoptedRun>;
}

/** Reads {@link Adopted} from `pod.status`; only Running pods are adopted. */
export function adoptedFromStatus(pod: Pod): Adopted {
  const status = pod.status;
  const runs = new Map<string, AdoptedRun>();
  if (status?.phase !== "Running") return { runs };
  for (const c of status.containerStatuses ?? []) {
    const startedAtMs = Date.parse(c.state?.running?.startedAt ?? "");
    if (Number.isNaN(startedAtMs)) continue;
    runs.set(c.name, { startedAtMs, restartCount: c.restartCount ?? 0 });
  }
  const startMs = Date.parse(status.startTime ?? "");
  return {
    podIp: status.podIP,
    startMs: Number.isNaN(startMs) ? undefined : startMs,
    runs,
  };
}
