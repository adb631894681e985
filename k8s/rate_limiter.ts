/**
 * Client-side request throttling: a token bucket like client-go's `flowcontrol.NewTokenBucketRateLimiter`
 * (`qps` tokens a second, at most `burst` saved up), so a busy controller does not flood the
 * apiserver.
 * @module
 */
import { type Clock, realClock } from "../base/clock.ts";

/** Options for {@link RateLimiter}. */
export interface RateLimiterOptions {
  /** Sustained requests per second; 0 or less turns throttling off. */
  qps: number;
  /** Requests that may go at once after a quiet spell; at least 1. */
  burst: number;
  /**
   * When a caller has to wait, it waits until this many tokens have come in (at most `burst`),
   * and the callers behind it then go at once: a steady stream is served in rounds, one timer a
   * round instead of one a request. The rate is the same; for a background stream such as events
   * it costs about a third of the CPU per request (a process woken 50 times a second pays for
   * each wake-up). Default 1: every caller waits just for its own token.
   */
  batch?: number;
  clock?: Clock;
}

/** A token bucket shared by every request of one client; waiters are served in arrival order. */
export class RateLimiter {
  readonly qps: number;
  readonly burst: number;
  readonly batch: number;
  #clock: Clock;
  #tokens: number;
  #last: number;

  constructor(options: RateLimiterOptions) {
    if (!Number.isFinite(options.qps)) throw new RangeError("qps must be a finite number");
    if (options.qps > 0 && !(options.burst >= 1)) {
      throw new RangeError("burst must be at least 1 when qps is positive");
    }
    this.qps = options.qps;
    this.burst = Math.max(1, Math.floor(options.burst));
    this.batch = Math.min(this.burst, Math.max(1, Math.floor(options.batch ?? 1)));
    this.#clock = options.clock ?? realClock;
    this.#tokens = this.burst;
    this.#last = this.#clock.now();
  }

  /**
   * Waits until this caller may send one request. Each call reserves its token at once, so the
   * order of calls is the order of release; an aborted wait hands its token back.
   */
  async acquire(options: { signal?: AbortSignal } = {}): Promise<void> {
    options.signal?.throwIfAborted();
    if (this.qps <= 0) return;
    this.#refill();
    this.#tokens -= 1;
    if (this.#tokens >= 0) return;
    // A whole round of `batch` tokens, unless this caller is further back than that.
    const waitMs = (Math.max(-this.#tokens, this.batch) / this.qps) * 1000;
    try {
      await this.#clock.sleep(waitMs, options.signal);
    } catch (err) {
      this.#refill();
      this.#tokens = Math.min(this.burst, this.#tokens + 1);
      throw err;
    }
  }

  /** Tokens available now (negative when callers are queued); for tests and metrics. */
  get available(): number {
    this.#refill();
    return this.#tokens;
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsed = Math.max(0, now - this.#last) / 1000;
    this.#last = now;
    this.#tokens = Math.min(this.burst, this.#tokens + elapsed * this.qps);
  }
}
