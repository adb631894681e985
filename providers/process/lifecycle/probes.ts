/**
 * Startup, liveness and readiness probes for one container instance, with the kubelet's
 * semantics (kubernetes/kubernetes pkg/kubelet/prober/worker.go): nothing but the startup probe
 * runs until it succeeds; each probe waits `initialDelaySeconds`, then runs every
 * `periodSeconds` with `timeoutSeconds`; a result flips only after `successThreshold`
 * successes or `failureThreshold` failures in a row; readiness starts as not ready; a failed
 * startup or liveness probe has the container killed and restarted by its restart policy.
 * Periods are slept on the injected clock.
 * @module
 */
import type { Container, Probe } from "kubernetes-types/core/v1.d.ts";
import { type ActionContext, runAction } from "./handlers.ts";
import type { ExecContext } from "../streams/exec.ts";
import type { Clock } from "../../../provider/mod.ts";

/** What the probes report to the container's owner. */
export interface ProbeEvents {
  /** The startup probe passed (or there is none): liveness and readiness begin. */
  started(): void;
  /** Readiness changed. */
  ready(ready: boolean): void;
  /** The startup or liveness probe failed `failureThreshold` times: kill the container. */
  failed(probe: "startup" | "liveness", message: string): void;
}

/** What probing needs. */
export interface ProbeContext {
  container: Container;
  exec: ExecContext;
  clock: Clock;
  signal: AbortSignal;
}

type Outcome = "success" | "failure";

/** Runs one probe until `stopAt` says so; calls `onChange` when its result flips. */
async function probeLoop(
  probe: Probe,
  ctx: ProbeContext,
  onChange: (result: Outcome, message: string) => boolean,
): Promise<void> {
  const { clock, signal } = ctx;
  const period = (probe.periodSeconds ?? 10) * 1000;
  const actionCtx: ActionContext = {
    exec: ctx.exec,
    container: ctx.container,
    timeoutMs: (probe.timeoutSeconds ?? 1) * 1000,
    clock,
    signal,
  };
  let result: Outcome | undefined;
  let successes = 0;
  let failures = 0;
  const delay = (probe.initialDelaySeconds ?? 0) * 1000;
  if (delay > 0) await clock.sleep(delay, signal);
  while (!signal.aborted) {
    const { ok, message } = await runAction(probe, actionCtx);
    if (signal.aborted) return;
    if (ok) {
      failures = 0;
      successes++;
      if (successes >= (probe.successThreshold ?? 1) && result !== "success") {
        result = "success";
        if (onChange(result, message)) return;
      }
    } else {
      successes = 0;
      failures++;
      if (failures >= (probe.failureThreshold ?? 3) && result !== "failure") {
        result = "failure";
        if (onChange(result, message)) return;
      }
    }
    await clock.sleep(period, signal);
  }
}

/** Runs the container's probes until `ctx.signal` aborts or a fatal probe failure. */
export async function runProbes(ctx: ProbeContext, events: ProbeEvents): Promise<void> {
  const { startupProbe, livenessProbe, readinessProbe } = ctx.container;
  try {
    if (startupProbe) {
      let passed = false;
      await probeLoop(startupProbe, ctx, (result, message) => {
        passed = result === "success";
        if (!passed) events.failed("startup", `Startup probe failed: ${message}`);
        return true;
      });
      if (!passed) return;
    }
    events.started();
    if (!readinessProbe) events.ready(true);
    const loops: Promise<void>[] = [];
    if (livenessProbe) {
      loops.push(probeLoop(livenessProbe, ctx, (result, message) => {
        if (result === "success") return false;
        events.failed("liveness", `Liveness probe failed: ${message}`);
        return true;
      }));
    }
    if (readinessProbe) {
      loops.push(probeLoop(readinessProbe, ctx, (result) => {
        events.ready(result === "success");
        return false;
      }));
    }
    await Promise.all(loops);
  } catch (err) {
    if (!ctx.signal.aborted) throw err;
  }
}
