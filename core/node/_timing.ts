/**
 * Folder-local timing helpers built on the injected {@link Clock}, so that tests driven by a
 * fake clock never meet a real timer.
 * @module
 */
import { cancel, raceSignal } from "../../base/cancel.ts";
import type { Clock } from "../../base/clock.ts";
import type { CallSlots } from "./node_api.ts";

/** A sleep that something else can end early: a provider change, a health change. */
export class Wakeup {
  #pending = false;
  #current?: AbortController;

  /** Ends the current {@link sleep} now, or the next one at once if none is running. */
  wake(): void {
    this.#pending = true;
    cancel(this.#current);
  }

  /**
   * Sleeps `ms` on `clock`; resolves early after {@link wake}. Rejects with the signal's reason
   * when `signal` aborts.
   */
  async sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return;
    }
    signal.throwIfAborted();
    // One controller that both a wake and `signal` end: lighter than `AbortSignal.any`, and
    // every node of a process sleeps in two of these at any time.
    const woken = new AbortController();
    const onAbort = () => cancel(woken);
    signal.addEventListener("abort", onAbort, { once: true });
    this.#current = woken;
    try {
      await clock.sleep(ms, woken.signal);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (!woken.signal.aborted) throw err;
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#current = undefined;
      this.#pending = false;
    }
  }
}

/** The call took longer than its deadline. */
export class DeadlineError extends Error {
  override name = "DeadlineError";
}

/**
 * Runs `call` with a signal that aborts when `signal` does or after `ms` on `clock`, whichever
 * comes first; the timer is cleared when the call settles.
 */
export async function withDeadline<T>(
  clock: Clock,
  ms: number,
  signal: AbortSignal,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = new AbortController();
  const done = new AbortController();
  clock.sleep(ms, done.signal).then(
    () => deadline.abort(new DeadlineError(`no answer within ${ms} ms`)),
    () => {},
  );
  const combined = AbortSignal.any([signal, deadline.signal]);
  try {
    return await raceSignal(call(combined), combined);
  } finally {
    cancel(done);
  }
}

/**
 * {@link withDeadline} once `slots`, when given, lets the call through: the deadline starts with
 * the call's turn, not while it queues. `urgent` calls go before the others there.
 */
export function withTurnAndDeadline<T>(
  slots: CallSlots | undefined,
  urgent: boolean,
  clock: Clock,
  ms: number,
  signal: AbortSignal,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const run = () => withDeadline(clock, ms, signal, call);
  return slots ? slots.run(run, { signal, urgent }) : run();
}

/**
 * Exponential backoff as the kubelet registers and the lease controller retries: 100 ms
 * doubling to a 7 s cap (kubernetes/kubernetes pkg/kubelet/kubelet_node_status.go
 * `registerWithAPIServer`; virtual-kubelet/virtual-kubelet node/lease_controller_v1.go
 * `backoffEnsureLease`), with up to 20 % jitter so that many nodes do not retry in step.
 */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(100 * 2 ** attempt, 7_000);
  return base * (0.8 + 0.2 * random());
}
