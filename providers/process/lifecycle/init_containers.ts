/**
 * The init-container step of a pod's sync (kubernetes/kubernetes
 * pkg/kubelet/kuberuntime/kuberuntime_manager.go `computeInitContainerActions`): regular init
 * containers run one at a time in order, each to success; sidecars (`restartPolicy: Always`)
 * start in order and keep running; a failed init container is retried unless the pod's
 * restartPolicy is Never (the kit's `containerRestartPolicy`).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import { containerRestartPolicy, isSidecar, shouldRestart } from "../../../provider/mod.ts";
import type { ContainerRecord } from "../state/state.ts";

/** "done" (the containers may start), "wait" (for an event) or when to look again. */
export type InitStep = "done" | "wait" | number | undefined;

/** What the init step asks of its pod runner. */
export interface InitOps {
  /** Starts `c` if it should run now (always restartable here); when to look again. */
  ensure(c: Container): Promise<number | undefined>;
  /** True once the live instance of the sidecar `name` has started (startup probe passed). */
  sidecarStarted(name: string): boolean;
}

/** Runs the next init container that is due; see the module doc. */
export async function stepInitContainers(
  pod: Pod,
  records: Record<string, ContainerRecord>,
  ops: InitOps,
): Promise<InitStep> {
  for (const c of pod.spec?.initContainers ?? []) {
    const cr = records[c.name];
    if (isSidecar(c)) {
      const wake = await ops.ensure(c);
      if (!ops.sidecarStarted(c.name)) return wake ?? "wait";
      continue;
    }
    if (cr?.terminated?.exitCode === 0 && !cr.running) continue;
    if (cr?.running) return "wait";
    const ended = cr?.terminated;
    if (ended && !shouldRestart(containerRestartPolicy(pod, c), ended.exitCode)) return "wait";
    return await ops.ensure(c) ?? "wait";
  }
  return "done";
}
