/**
 * Stopping one live container instance as the kubelet does (kubernetes/kubernetes
 * pkg/kubelet/kuberuntime/kuberuntime_container.go `killContainer`): its probes and hooks are
 * stopped, the preStop hook runs within the grace period, then SIGTERM to the process group and
 * SIGKILL when the rest of the grace period is over.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import type { ExecContext } from "../streams/exec.ts";
import { runAction } from "../lifecycle/handlers.ts";
import type { Instance } from "./instance.ts";
import type { Clock } from "../../../provider/mod.ts";

/** A running instance as its pod runner tracks it. */
export interface LiveContainer {
  instance: Instance;
  exec: ExecContext;
  /** Aborts the instance's probes and hooks. */
  stop: AbortController;
  /** Why vkubelet killed it (a failed probe or hook, a changed image); kept in its status. */
  killMessage?: string;
}

/** The grace period for killing `c` on its own (probe failure, image change), in ms. */
export function killGraceMs(c: Container, pod: Pod): number {
  const probeGrace = c.livenessProbe?.terminationGracePeriodSeconds;
  return (probeGrace ?? pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
}

/** Runs preStop, then SIGTERM and SIGKILL after what is left of `graceMs`; resolves at the end. */
export async function stopContainer(
  c: Container,
  live: LiveContainer,
  options: { graceMs: number; clock: Clock },
): Promise<void> {
  const { clock, graceMs } = options;
  const started = clock.now();
  live.stop.abort();
  const preStop = c.lifecycle?.preStop;
  if (preStop) {
    const budget = new AbortController();
    const timer = clock.sleep(graceMs, budget.signal).then(() => budget.abort(), () => {});
    await runAction(preStop, {
      exec: live.exec,
      container: c,
      timeoutMs: graceMs,
      clock,
      signal: budget.signal,
    });
    budget.abort();
    await timer;
  }
  // The kubelet gives at least 2 s after preStop (kuberuntime_container.go minimumGracePeriodInSeconds).
  const rest = Math.max(graceMs - (clock.now() - started), preStop ? 2000 : 0);
  await live.instance.stop(rest);
}
