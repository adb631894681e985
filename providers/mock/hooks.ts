/**
 * Test hooks of the mock provider that script a container's life from pod annotations:
 *
 * - `mock.vkubelet.io/exit: "web=3"` or `"web=3@2s,sidecar=0@1m"`: container `web` exits with
 *   code 3, two seconds (on the injected clock) after each start. What follows is the kit's
 *   restart rule (provider/restart.ts, the kubelet's): under Never, and under OnFailure for code
 *   0, the container stays terminated (reason `Error`, or `Completed` for 0); otherwise it
 *   restarts, at once the first time, then after a back-off of 10 s doubling to 5 min during
 *   which it waits in `CrashLoopBackOff` with the exit as `lastState`. Sidecars always restart.
 * - `mock.vkubelet.io/start-error: "web"` or `"web=exec: \"nginx\": not found"`: container `web`
 *   never starts and waits with reason `CreateContainerError` and that message, so the pod stays
 *   Pending, as the kubelet reports a container its runtime cannot create.
 *
 * Entries are separated by commas, so a message cannot contain one.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type BackoffEntry,
  type Clock,
  containerRestartPolicy,
  crashLoopWaiting,
  InvalidInputError,
  parseDuration,
  restartStep,
  shouldRestart,
} from "../../provider/mod.ts";
import { type ContainerRun, isRunning, longRunningContainers } from "./status.ts";

/** The annotation naming containers that exit, with their code and delay. */
export const EXIT_ANNOTATION = "mock.vkubelet.io/exit";
/** The annotation naming containers that fail to start. */
export const START_ERROR_ANNOTATION = "mock.vkubelet.io/start-error";

/** One container's scripted exit: its code, and how long after each start. */
export interface ExitHook {
  exitCode: number;
  afterMs: number;
}

/** The hooks a pod's annotations ask for, by container name. */
export interface PodHooks {
  exits: Map<string, ExitHook>;
  startErrors: Map<string, string>;
}

/** Reads the hook annotations; an InvalidInputError names the annotation and the fix. */
export function parseHooks(pod: Pod): PodHooks {
  const annotations = pod.metadata?.annotations ?? {};
  const names = new Set(longRunningContainers(pod).map((c) => c.name));
  const hooks: PodHooks = { exits: new Map(), startErrors: new Map() };
  const problem = (annotation: string, detail: string) =>
    new InvalidInputError(`annotation ${annotation}: ${detail}`);
  const checkName = (annotation: string, name: string) => {
    if (!names.has(name)) {
      throw problem(annotation, `pod has no container ${JSON.stringify(name)}`);
    }
  };
  for (const entry of entries(annotations[EXIT_ANNOTATION])) {
    const match = /^([^=]+)=(\d{1,3})(?:@(.+))?$/.exec(entry);
    const afterMs = match?.[3] === undefined ? 0 : parseDuration(match[3]);
    if (!match || Number(match[2]) > 255 || afterMs === undefined || afterMs < 0) {
      throw problem(
        EXIT_ANNOTATION,
        `expected CONTAINER=CODE[@DELAY] such as web=3 or web=0@2s (code 0-255), got ${
          JSON.stringify(entry)
        }`,
      );
    }
    checkName(EXIT_ANNOTATION, match[1].trim());
    hooks.exits.set(match[1].trim(), { exitCode: Number(match[2]), afterMs });
  }
  for (const entry of entries(annotations[START_ERROR_ANNOTATION])) {
    const eq = entry.indexOf("=");
    const name = (eq < 0 ? entry : entry.slice(0, eq)).trim();
    checkName(START_ERROR_ANNOTATION, name);
    const message = eq < 0 ? "" : entry.slice(eq + 1).trim();
    hooks.startErrors.set(
      name,
      message || `mock: container ${name} cannot be created (${START_ERROR_ANNOTATION})`,
    );
  }
  return hooks;
}

function entries(text: string | undefined): string[] {
  return (text ?? "").split(",").map((e) => e.trim()).filter(Boolean);
}

/** The first run of a container that fails to start. */
export function startErrorRun(image: string, nowMs: number, message: string): ContainerRun {
  return {
    startedAtMs: nowMs,
    restartCount: 0,
    image,
    waiting: { reason: "CreateContainerError", message },
  };
}

/** What {@link playExits} reads and changes. */
export interface ExitScriptDeps {
  pod: Pod;
  clock: Clock;
  /** Aborts when the pod is deleted or has finished. */
  signal: AbortSignal;
  /** The container's current run. */
  run(name: string): ContainerRun | undefined;
  /** Replaces the container's run and reports the new status. */
  setRun(name: string, run: ContainerRun): void;
}

/** Plays the exit hooks of a pod until `deps.signal` aborts or no container restarts. */
export async function playExits(hooks: PodHooks, deps: ExitScriptDeps): Promise<void> {
  const containers = longRunningContainers(deps.pod).filter((c) => hooks.exits.has(c.name));
  await Promise.all(containers.map((c) => {
    return playExit(c.name, hooks.exits.get(c.name)!, containerRestartPolicy(deps.pod, c), deps);
  }));
}

async function playExit(name: string, hook: ExitHook, policy: string, deps: ExitScriptDeps) {
  const { clock, signal } = deps;
  let backOff: BackoffEntry | undefined; // none until the first restart, as the kubelet's
  while (!signal.aborted) {
    const run = deps.run(name);
    if (!run || !isRunning(run)) return;
    if (!await sleep(clock, run.startedAtMs + hook.afterMs - clock.now(), signal)) return;
    const now = clock.now();
    const exit = { exitCode: hook.exitCode, finishedAtMs: now };
    if (!shouldRestart(policy, hook.exitCode)) return deps.setRun(name, { ...run, exited: exit });
    const previous = { ...exit, startedAtMs: run.startedAtMs, restartCount: run.restartCount };
    // The kit's restart state machine (provider/restart.ts), on the injected clock.
    let step = restartStep(backOff, now, now);
    while (step.action === "back-off") {
      const waiting = crashLoopWaiting(deps.pod, name, step.delayMs);
      deps.setRun(name, { ...run, waiting, previous });
      if (!await sleep(clock, step.untilMs - clock.now(), signal)) return;
      step = restartStep(backOff, now, clock.now());
    }
    backOff = step.entry;
    deps.setRun(name, {
      startedAtMs: clock.now(),
      restartCount: run.restartCount + 1,
      image: run.image,
      previous,
    });
  }
}

/** Sleeps `ms` (at least 0); false when `signal` aborted. */
async function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await clock.sleep(Math.max(ms, 0), signal);
    return !signal.aborted;
  } catch {
    return false;
  }
}
