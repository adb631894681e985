/**
 * Whether and when a container (or a remote backend's whole pod) runs again: the kubelet's
 * restart policy and its crash-loop back-off, written once for every provider.
 *
 * - Policy: a sidecar (an init container with `restartPolicy: Always`) always restarts; a
 *   regular init container restarts after a failure unless the pod's policy is Never; a regular
 *   container follows the pod's policy — Always, OnFailure (a non-zero exit) or Never
 *   (kubernetes/kubernetes pkg/kubelet/container/helpers.go `ShouldContainerBeRestarted`,
 *   pkg/kubelet/kuberuntime/kuberuntime_manager.go `computeInitContainerActions`).
 * - Back-off: the first restart is at once; each later one waits 10 s, doubling to 5 min,
 *   counted from when the container finished; an entry not renewed for twice the maximum is
 *   forgotten, so a container that ran well for 10 min starts over at once
 *   (pkg/kubelet/kuberuntime/kuberuntime_manager.go `doBackOff`, pkg/kubelet/kubelet.go
 *   `flowcontrol.NewBackOff(backOffPeriod, MaxContainerBackOff)`, k8s.io/client-go
 *   util/flowcontrol/backoff.go `IsInBackOffSince`, `Next`, `hasExpired`).
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../base/clock.ts";
import { isSidecar } from "./pod_phase.ts";

/** The kubelet's first crash-loop back-off (pkg/kubelet/kubelet.go `backOffPeriod`). */
export const RESTART_BACKOFF_INITIAL_MS = 10_000;
/** The kubelet's longest crash-loop back-off (pkg/kubelet/kubelet.go `MaxContainerBackOff`). */
export const RESTART_BACKOFF_MAX_MS = 300_000;

/** A pod's (or a container's) restart policy. */
export type RestartPolicy = "Always" | "OnFailure" | "Never";

/**
 * The policy that decides whether `container` of `pod` runs again: Always for a sidecar;
 * OnFailure for a regular init container (Never under a Never pod), which is done once it
 * succeeds; the pod's policy (default Always) for any other container.
 *
 * @example Usage
 * ```ts
 * import { containerRestartPolicy } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const pod = {
 *   spec: {
 *     restartPolicy: "Never" as const,
 *     initContainers: [{ name: "proxy", restartPolicy: "Always" }, { name: "setup" }],
 *     containers: [{ name: "web" }],
 *   },
 * };
 * assert.equal(containerRestartPolicy(pod, pod.spec.initContainers[0]), "Always");
 * assert.equal(containerRestartPolicy(pod, pod.spec.initContainers[1]), "Never");
 * assert.equal(containerRestartPolicy(pod, pod.spec.containers[0]), "Never");
 * ```
 */
export function containerRestartPolicy(pod: Pod, container: Container): RestartPolicy {
  if (isSidecar(container)) return "Always";
  const policy = podRestartPolicy(pod);
  const isInit = (pod.spec?.initContainers ?? []).some((c) => c.name === container.name);
  return isInit && policy === "Always" ? "OnFailure" : policy;
}

/** The pod's `spec.restartPolicy`, Always when unset (the API server's default). */
export function podRestartPolicy(pod: Pod): RestartPolicy {
  const policy = pod.spec?.restartPolicy;
  return policy === "OnFailure" || policy === "Never" ? policy : "Always";
}

/**
 * True if a container that exited with `exitCode` runs again under `policy` (unset: Always).
 *
 * @example Usage
 * ```ts
 * import { shouldRestart } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.ok(shouldRestart("Always", 0));
 * assert.ok(shouldRestart("OnFailure", 1) && !shouldRestart("OnFailure", 0));
 * assert.ok(!shouldRestart("Never", 137));
 * ```
 */
export function shouldRestart(policy: string | undefined, exitCode: number): boolean {
  if (policy === "Never") return false;
  return policy !== "OnFailure" || exitCode !== 0;
}

/**
 * For a backend that restarts a pod's containers together (a new task, group or job): true if
 * the pod's policy runs them again after they exited with `exitCodes` — under OnFailure when any
 * of them failed.
 */
export function shouldRestartPod(pod: Pod, exitCodes: Iterable<number>): boolean {
  const policy = podRestartPolicy(pod);
  if (policy !== "OnFailure") return policy === "Always";
  return [...exitCodes].some((code) => code !== 0);
}

/** One container's back-off (client-go flowcontrol's `backoffEntry`); callers may persist it. */
export interface BackoffEntry {
  /** The wait before the next restart. */
  delayMs: number;
  /** When the last restart was recorded (clock ms). */
  lastUpdateMs: number;
}

/** The back-off's numbers; the kubelet's by default. */
export interface BackoffOptions {
  /** The first wait (default {@link RESTART_BACKOFF_INITIAL_MS}). */
  initialMs?: number;
  /** The longest wait (default {@link RESTART_BACKOFF_MAX_MS}). */
  maxMs?: number;
}

// flowcontrol's hasExpired: "consider stable if it's ok for twice the maxDuration".
function expired(entry: BackoffEntry, eventMs: number, maxMs: number): boolean {
  return eventMs - entry.lastUpdateMs > 2 * maxMs;
}

/**
 * When a container that finished at `finishedAtMs` may start again (clock ms; at or before now
 * means now): `finishedAtMs` itself without a live entry, else `finishedAtMs` plus the entry's
 * delay (flowcontrol `IsInBackOffSince`).
 */
export function backoffUntil(
  entry: BackoffEntry | undefined,
  finishedAtMs: number,
  options: BackoffOptions = {},
): number {
  const maxMs = options.maxMs ?? RESTART_BACKOFF_MAX_MS;
  if (!entry || expired(entry, finishedAtMs, maxMs)) return finishedAtMs;
  return finishedAtMs + entry.delayMs;
}

/**
 * The entry after a restart at `nowMs` of a container that finished at `finishedAtMs`: the first
 * wait for a new or forgotten entry, else twice the last, at most the maximum (flowcontrol
 * `Next`).
 */
export function nextBackoff(
  entry: BackoffEntry | undefined,
  finishedAtMs: number,
  nowMs: number,
  options: BackoffOptions = {},
): BackoffEntry {
  const initialMs = options.initialMs ?? RESTART_BACKOFF_INITIAL_MS;
  const maxMs = options.maxMs ?? RESTART_BACKOFF_MAX_MS;
  const delayMs = !entry || expired(entry, finishedAtMs, maxMs)
    ? initialMs
    : Math.min(entry.delayMs * 2, maxMs);
  return { delayMs, lastUpdateMs: nowMs };
}

/** What to do now about a container (or a backend's whole pod) that ended and may run again. */
export type RestartStep =
  /** Still in its crash-loop back-off: wait until `untilMs`, and report {@link crashLoopWaiting}. */
  | { action: "back-off"; untilMs: number; delayMs: number }
  /** Start it now; keep `entry` for its next end (the restart is counted). */
  | { action: "start"; entry: BackoffEntry };

/**
 * The one restart state machine, every provider's: a container that finished at `finishedAtMs`
 * and whose policy runs it again is, at `nowMs`, either in back-off (its `entry`'s delay since it
 * finished) or started, the entry then doubled for the next end — the kubelet's `doBackOff`
 * (pkg/kubelet/kuberuntime/kuberuntime_manager.go: `IsInBackOffSince`, else `Next` and start).
 * The caller keeps the entry (in memory, or on disk to survive a restart) and counts the restart.
 *
 * @example Usage
 * ```ts
 * import { restartStep } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const first = restartStep(undefined, 1_000, 1_000);
 * assert.equal(first.action, "start"); // the first restart is at once
 * const entry = first.action === "start" ? first.entry : undefined;
 * assert.deepEqual(restartStep(entry, 2_000, 2_000), {
 *   action: "back-off",
 *   untilMs: 12_000,
 *   delayMs: 10_000,
 * });
 * ```
 */
export function restartStep(
  entry: BackoffEntry | undefined,
  finishedAtMs: number,
  nowMs: number,
  options: BackoffOptions = {},
): RestartStep {
  const untilMs = backoffUntil(entry, finishedAtMs, options);
  if (untilMs > nowMs) return { action: "back-off", untilMs, delayMs: untilMs - finishedAtMs };
  return { action: "start", entry: nextBackoff(entry, finishedAtMs, nowMs, options) };
}

/**
 * The waiting state of a container in back-off, with the kubelet's message:
 * `back-off 1m20s restarting failed container=web pod=web-0_shop(uid)` (kuberuntime_manager.go
 * `doBackOff`: the delay as Go prints a duration, the pod as pkg/kubelet/util/format `Pod`).
 */
export function crashLoopWaiting(
  pod: Pod,
  container: string,
  delayMs: number,
): { reason: "CrashLoopBackOff"; message: string } {
  const { name = "", namespace = "", uid = "" } = pod.metadata ?? {};
  return {
    reason: "CrashLoopBackOff",
    message: `back-off ${goDuration(delayMs)} restarting failed container=${container} ` +
      `pod=${name}_${namespace}(${uid})`,
  };
}

/** Milliseconds as Go's `time.Duration.String` prints them: `10s`, `1m20s`, `5m0s`, `1.5s`. */
function goDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const seconds = `${(ms % 60_000) / 1000}s`;
  if (hours) return `${hours}h${minutes}m${seconds}`;
  return minutes ? `${minutes}m${seconds}` : seconds;
}

/** A planned restart: when it runs, and the entry once it has. */
export interface PlannedRestart {
  /** Clock ms at which the restart is due. */
  atMs: number;
  /** The entry after the restart, to keep for the next one. */
  entry: BackoffEntry;
}

/**
 * For a loop that learns of a stop and restarts later: when to restart a container that
 * finished at `finishedAtMs`, and the entry to keep — {@link backoffUntil} and
 * {@link nextBackoff} in one step, the restart counted when it is due.
 *
 * @example Usage
 * ```ts
 * import { planRestart } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const first = planRestart(undefined, 1_000);
 * assert.equal(first.atMs, 1_000); // at once
 * const second = planRestart(first.entry, 5_000);
 * assert.equal(second.atMs, 15_000); // 10 s after the second stop
 * ```
 */
export function planRestart(
  entry: BackoffEntry | undefined,
  finishedAtMs: number,
  options: BackoffOptions = {},
): PlannedRestart {
  const atMs = backoffUntil(entry, finishedAtMs, options);
  return { atMs, entry: nextBackoff(entry, finishedAtMs, atMs, options) };
}

/** What {@link RestartBackoff} needs. */
export interface RestartBackoffOptions extends BackoffOptions {
  /** The clock the back-off's times are read from. */
  clock: Clock;
}

/**
 * The kubelet's crash-loop back-off for many containers or pods, keyed by the caller (the
 * kubelet keys it by pod name, namespace, uid and container): client-go's `flowcontrol.Backoff`
 * on the injected clock, with the kubelet's numbers unless told otherwise.
 */
export class RestartBackoff {
  readonly #entries = new Map<string, BackoffEntry>();
  readonly #options: RestartBackoffOptions;

  /** No entries yet; see {@link RestartBackoffOptions}. */
  constructor(options: RestartBackoffOptions) {
    this.#options = options;
  }

  /** When `key`, finished at `finishedAtMs`, may start again; at or before now means now. */
  until(key: string, finishedAtMs: number): number {
    return backoffUntil(this.#entries.get(key), finishedAtMs, this.#options);
  }

  /** Records that `key`, finished at `finishedAtMs`, starts again now. */
  restarted(key: string, finishedAtMs: number): void {
    this.#gc();
    const now = this.#options.clock.now();
    this.#entries.set(key, nextBackoff(this.#entries.get(key), finishedAtMs, now, this.#options));
  }

  /** Plans the restart of `key` after a stop at `finishedAtMs`; see {@link planRestart}. */
  plan(key: string, finishedAtMs: number): number {
    this.#gc();
    const { atMs, entry } = planRestart(this.#entries.get(key), finishedAtMs, this.#options);
    this.#entries.set(key, entry);
    return atMs;
  }

  /** The wait `key` is in (0 without an entry), for a `back-off 10s restarting …` message. */
  delayMs(key: string): number {
    return this.#entries.get(key)?.delayMs ?? 0;
  }

  /** Forgets `key` (its pod is gone). */
  forget(key: string): void {
    this.#entries.delete(key);
  }

  // flowcontrol's GC: entries not renewed for twice the maximum say nothing any more.
  #gc(): void {
    const now = this.#options.clock.now();
    const maxMs = this.#options.maxMs ?? RESTART_BACKOFF_MAX_MS;
    for (const [key, entry] of this.#entries) {
      if (expired(entry, now, maxMs)) this.#entries.delete(key);
    }
  }
}

/**
 * The key the kubelet's back-off files a container under (kuberuntime `getStableKey` without the
 * spec hash): a pod of the same name but another uid starts over. Without `container`, the pod.
 */
export function restartKey(pod: Pod, container?: string): string {
  const { namespace, name, uid } = pod.metadata ?? {};
  const base = `${namespace ?? ""}/${name ?? ""}/${uid ?? ""}`;
  return container === undefined ? base : `${base}/${container}`;
}
