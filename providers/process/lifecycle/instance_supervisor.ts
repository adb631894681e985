/**
 * What runs alongside one container instance while it lives: the postStart hook (a failure
 * kills the container, kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go
 * `startContainer`), then its probes (./probes.ts).
 * @module
 */
import type { Container } from "kubernetes-types/core/v1.d.ts";
import type { LiveContainer } from "../launch/container_stop.ts";
import { runAction } from "./handlers.ts";
import { runProbes } from "./probes.ts";
import type { Clock } from "../../../provider/mod.ts";

/** Where the supervisor reports to. */
export interface SupervisorEvents {
  /** A startup/readiness flag of the instance changed. */
  flag(flag: "started" | "ready", value: boolean): void;
  /** The instance must be killed (failed hook or probe), with the message for its status. */
  kill(message: string): void;
}

/** Runs the postStart hook and the probes of `live` until `signal` aborts. */
export async function superviseInstance(
  c: Container,
  live: LiveContainer,
  options: { clock: Clock; signal: AbortSignal; events: SupervisorEvents },
): Promise<void> {
  const { clock, signal, events } = options;
  const exec = live.exec;
  if (c.lifecycle?.postStart && !live.instance.record.started) {
    const result = await runAction(c.lifecycle.postStart, {
      exec,
      container: c,
      timeoutMs: 30_000,
      clock,
      signal,
    });
    if (!result.ok && !signal.aborted) return events.kill(`PostStartHookError: ${result.message}`);
  }
  await runProbes({ container: c, exec, clock, signal }, {
    started: () => events.flag("started", true),
    ready: (ready) => events.flag("ready", ready),
    failed: (_probe, message) => events.kill(message),
  });
}
