/**
 * The pod phase from its container statuses, as the kubelet's `getPhase` decides it
 * (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go, v1.37, without the alpha
 * ContainerRestartRules): init containers first, sidecars (init containers with
 * `restartPolicy: Always`) apart, then the regular containers and the pod's restartPolicy.
 * @module
 */
import type { Container, ContainerStatus, Pod } from "kubernetes-types/core/v1.d.ts";

/**
 * True for a sidecar: an init container that keeps running (`restartPolicy: Always`).
 *
 * @example Usage
 * ```ts
 * import { isSidecar } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.ok(isSidecar({ name: "proxy", restartPolicy: "Always" }));
 * assert.ok(!isSidecar({ name: "setup" }));
 * ```
 */
export function isSidecar(container: Container): boolean {
  return container.restartPolicy === "Always";
}

/**
 * True for Succeeded and Failed: phases a pod never leaves.
 *
 * @example Usage
 * ```ts
 * import { isTerminalPhase } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.ok(isTerminalPhase("Failed"));
 * assert.ok(!isTerminalPhase("Running"));
 * ```
 */
export function isTerminalPhase(phase: string | undefined): boolean {
  return phase === "Succeeded" || phase === "Failed";
}

/** What {@link podPhase} needs besides the pod and its container statuses. */
export interface PhaseOptions {
  /** No container will run again (the pod is deleted): the kubelet's `podIsTerminal`. */
  terminal: boolean;
  /** A regular container has run: a restarting sidecar does not make the pod Pending again. */
  initialized: boolean;
}

/** Container statuses of a pod, by name. */
export type StatusesByName = ReadonlyMap<string, ContainerStatus>;

/** The phase of `pod` from `statuses` (regular and init containers), as the kubelet's getPhase. */
export function podPhase(pod: Pod, statuses: StatusesByName, options: PhaseOptions): string {
  const spec = pod.spec ?? { containers: [] };
  let pendingInit = 0, pendingSidecars = 0, failedInit = 0;
  let unknown = 0, running = 0, waiting = 0, stopped = 0, succeeded = 0;
  for (const c of spec.initContainers ?? []) {
    const s = statuses.get(c.name);
    if (isSidecar(c)) {
      if (!s) unknown++;
      else if (s.state?.running) {
        if (!s.started) pendingSidecars++;
        running++;
      } else if (s.state?.waiting && !s.lastState?.terminated) {
        pendingSidecars++;
        waiting++;
      } else if (!s.state?.waiting && !s.state?.terminated) {
        pendingSidecars++;
        unknown++;
      }
      // A terminated sidecar, or one between restarts, does not count for the phase.
      continue;
    }
    const last = s?.state?.terminated ??
      (s?.state?.waiting ? s.lastState?.terminated : undefined);
    if (!last) pendingInit++; // not run, running, or waiting for its first start
    else if (last.exitCode !== 0) failedInit++;
  }
  for (const c of spec.containers) {
    const s = statuses.get(c.name);
    if (!s) unknown++;
    else if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting && s.lastState?.terminated) stopped++;
    else if (s.state?.waiting) waiting++;
    else unknown++;
  }
  const policy = spec.restartPolicy ?? "Always";
  if (failedInit > 0 && policy === "Never") return "Failed";
  if (pendingInit > 0 || (pendingSidecars > 0 && !options.initialized) || waiting > 0) {
    return "Pending";
  }
  if (running > 0 && unknown === 0) return "Running";
  if (running > 0 || stopped === 0 || unknown > 0) return "Pending";
  if (options.terminal) return stopped === succeeded ? "Succeeded" : "Failed";
  if (policy === "Always") return "Running"; // every container is between restarts
  if (stopped === succeeded) return "Succeeded";
  return policy === "Never" ? "Failed" : "Running"; // OnFailure restarts the failed ones
}
