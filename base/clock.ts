/**
 * An injectable clock: every controller reads time and sleeps through one of these, so tests
 * can drive time with {@link FakeClock} from `./fake_clock.ts` instead of waiting.
 * @module
 */

/** Reads the time and waits; sleeps end early, with the signal's reason, when it aborts. */
export interface Clock {
  /** Milliseconds since the Unix epoch (the wall clock: NTP or an operator may step it). */
  now(): number;
  /**
   * Milliseconds since an arbitrary start, never stepped (`performance.now()`): for measuring
   * how long something took or is left, where a step of the wall clock must not count.
   */
  monotonic(): number;
  /** Resolves after `ms` milliseconds; rejects with `signal.reason` if the signal aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The wall clock, with timers that are cleared when the signal aborts. */
export const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

/** Returns `ms` spread by up to ±`fraction` at random, so that many clients do not act in step. */
export function jitter(ms: number, fraction = 0.1): number {
  return ms * (1 - fraction + Math.random() * 2 * fraction);
}
