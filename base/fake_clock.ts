/**
 * A clock that only moves when a test says so: controllers and providers take a {@link Clock}, and
 * a test hands them this one to drive timers without waiting. Part of the provider kit
 * (re-exported by `provider/testing`), so a provider's own tests can use it too.
 * @module
 */
import type { Clock } from "./clock.ts";

interface Sleeper {
  until: number;
  resolve: () => void;
}

/**
 * A {@link Clock} whose time advances only through {@link FakeClock.advance}. Sleeps run on its
 * monotonic time, as real timers do; {@link FakeClock.stepWall} steps the wall clock alone, as
 * NTP or an operator can.
 */
export class FakeClock implements Clock {
  /** Monotonic time (ms); starts at 0. */
  #mono = 0;
  /** The wall clock minus the monotonic one. */
  #wallOffset: number;
  #sleepers: Sleeper[] = [];

  constructor(start: number = Date.UTC(2026, 0, 1)) {
    this.#wallOffset = start;
  }

  now(): number {
    return this.#mono + this.#wallOffset;
  }

  monotonic(): number {
    return this.#mono;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const sleeper: Sleeper = { until: this.#mono + Math.max(0, ms), resolve };
      signal?.addEventListener("abort", () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(signal.reason);
      }, { once: true });
      this.#sleepers.push(sleeper);
    });
  }

  /** Number of sleeps waiting; lets a test wait until a loop has gone to sleep. */
  get pending(): number {
    return this.#sleepers.length;
  }

  /** Steps the wall clock by `ms` (either way); monotonic time and sleeps are not moved. */
  stepWall(ms: number): void {
    this.#wallOffset += ms;
  }

  /**
   * Moves both clocks forward by `ms` without waking any sleep, as a paused process (SIGSTOP, a
   * frozen VM) finds them when it runs again; the next {@link advance} wakes what is overdue.
   */
  jump(ms: number): void {
    this.#mono += Math.max(0, ms);
  }

  /** Moves time forward and wakes every sleep that is due, letting microtasks run between. */
  async advance(ms: number): Promise<void> {
    const target = this.#mono + ms;
    while (true) {
      const due = this.#sleepers.filter((s) => s.until <= target).sort((a, b) => a.until - b.until);
      if (due.length === 0) break;
      const next = due[0];
      this.#mono = Math.max(this.#mono, next.until);
      this.#sleepers = this.#sleepers.filter((s) => s !== next);
      next.resolve();
      await flush();
    }
    this.#mono = target;
    await flush();
  }
}

/** Lets pending promise callbacks and zero-delay timers run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
}
