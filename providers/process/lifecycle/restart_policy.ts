/**
 * Whether and when a terminated container starts again: the kit's restart policy and its one
 * restart state machine (provider/restart.ts `restartStep`), the back-off entry kept in the container's record
 * so that it survives a vkubelet restart, with the `CrashLoopBackOff` waiting reason the kubelet
 * reports meanwhile (kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go
 * `doBackOff`).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { crashLoopWaiting, restartStep } from "../../../provider/mod.ts";
import type { ContainerRecord, Termination } from "../state/state.ts";

/** What to do about one container now. */
export type RestartDecision =
  /** Running, or ended for good. */
  | { action: "none" }
  /** In back-off until `until`; report `waiting`. */
  | { action: "back-off"; until: number; waiting: { reason: string; message: string } }
  /** Start it now (the record already counts the restart). */
  | { action: "start" };

/**
 * Decides about `c`; on "start" after a termination, records the restart in `cr`
 * (restartCount, lastState, back-off entry) as the kubelet does before starting it again.
 */
export function decideStart(
  pod: Pod,
  c: Container,
  cr: ContainerRecord,
  options: { restart: (t: Termination) => boolean; nowMs: number },
): RestartDecision {
  if (cr.running) return { action: "none" };
  const t = cr.terminated;
  if (!t) return { action: "start" };
  if (!options.restart(t)) return { action: "none" };
  const step = restartStep(cr.backoff, t.finishedAtMs, options.nowMs);
  if (step.action === "back-off") {
    const waiting = crashLoopWaiting(pod, c.name, step.delayMs);
    return { action: "back-off", until: step.untilMs, waiting };
  }
  cr.backoff = step.entry;
  cr.restartCount++;
  cr.lastTermination = t;
  cr.terminated = undefined;
  return { action: "start" };
}
