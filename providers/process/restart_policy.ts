/**
 * Whether and when a terminated container starts again: the pod's `restartPolicy` and the
 * kubelet's back-off (./backoff.ts), with the `CrashLoopBackOff` waiting reason the kubelet
 * reports meanwhile (kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go
 * `doBackOff`).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { backoffUntil, recordRestart } from "./backoff.ts";
import type { ContainerRecord, Termination } from "./state.ts";

/** What to do about one container now. */
export type RestartDecision =
  /** Running, or ended for good. */
  | { action: "none" }
  /** In back-off until `until`; report `waiting`. */
  | { action: "back-off"; until: number; waiting: { reason: string; message: string } }
  /** Start it now (the record already counts the restart). */
  | { action: "start" };

/** True if the pod's restartPolicy restarts a container that exited with `exitCode`. */
export function shouldRestart(pod: Pod, exitCode: number): boolean {
  const policy = pod.spec?.restartPolicy ?? "Always";
  return policy === "Always" || (policy === "OnFailure" && exitCode !== 0);
}

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
  const until = backoffUntil(cr, t.finishedAtMs, options.nowMs);
  if (until !== undefined) {
    const delay = Math.round((cr.backoff?.delayMs ?? 0) / 1000);
    const { name, namespace, uid } = pod.metadata ?? {};
    const message =
      `back-off ${delay}s restarting failed container=${c.name} pod=${name}_${namespace}(${uid})`;
    return { action: "back-off", until, waiting: { reason: "CrashLoopBackOff", message } };
  }
  recordRestart(cr, t.finishedAtMs, options.nowMs);
  cr.restartCount++;
  cr.lastTermination = t;
  cr.terminated = undefined;
  return { action: "start" };
}
