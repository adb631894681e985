/**
 * One back-off for every ECS call of a provider, on top of the SDK's own retries: once a call
 * still fails with `ThrottlingException` (the SDK's attempts spent), every call waits — the next
 * DescribeTasks batch, a RunTask for another pod — a full-jitter exponential delay (AWS's
 * "Exponential Backoff And Jitter": a random wait up to base × 2^n, capped), or longer when the
 * answer carries a retry hint (`Retry-After` in seconds, `x-amz-retry-after` in ms), then the call
 * is tried again; a call that succeeds halves the level. Other errors pass through.
 * @module
 */
import { awsErrorName } from "./aws.ts";

/** The back-off's numbers; a random source and a sleep for tests. */
export interface ThrottleOptions {
  /** The first delay's ceiling (default 500 ms). */
  baseMs?: number;
  /** The longest delay (default 20 s). */
  capMs?: number;
  /** Tries of one call while throttled, the first included (default 6). */
  attempts?: number;
  /** Uniform in [0, 1); default Math.random. */
  random?: () => number;
  /** Waits `ms` or until `signal` aborts; default a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const THROTTLED = new Set(["ThrottlingException", "TooManyRequestsException", "Throttling"]);

/** True when an SDK error says the call was throttled. */
export function isThrottled(err: unknown): boolean {
  const name = awsErrorName(err);
  return name !== undefined && THROTTLED.has(name) ||
    (err as { $retryable?: { throttling?: boolean } })?.$retryable?.throttling === true;
}

/** The wait a throttled answer asks for, in ms, if it says. */
export function retryHintMs(err: unknown): number | undefined {
  const headers = (err as { $response?: { headers?: Record<string, string> } })?.$response?.headers;
  const ms = Number(headers?.["x-amz-retry-after"]);
  if (Number.isFinite(ms) && ms > 0) return ms;
  const seconds = Number(headers?.["retry-after"]);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
}

function timer(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const id = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(id);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The shared back-off; see the module doc. */
export class Throttle {
  readonly #o: Required<ThrottleOptions>;
  #level = 0;
  #pausedUntil = 0;
  /** How often a call was throttled (for tests and logs). */
  throttled = 0;

  constructor(options: ThrottleOptions = {}) {
    this.#o = {
      baseMs: 500,
      capMs: 20_000,
      attempts: 6,
      random: Math.random,
      sleep: timer,
      ...options,
    };
  }

  /** Runs `call`, waiting out the back-off first and again after each throttled answer. */
  async run<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1;; attempt++) {
      const wait = this.#pausedUntil - Date.now();
      if (wait > 0) await this.#o.sleep(wait, signal);
      try {
        const out = await call();
        this.#level = Math.max(0, this.#level - 1);
        return out;
      } catch (err) {
        if (!isThrottled(err) || attempt >= this.#o.attempts) throw err;
        this.throttled++;
        this.#pause(retryHintMs(err));
      }
    }
  }

  #pause(hintMs: number | undefined): void {
    const ceiling = Math.min(this.#o.capMs, this.#o.baseMs * 2 ** this.#level);
    this.#level = Math.min(this.#level + 1, 30);
    const delay = Math.max(hintMs ?? 0, this.#o.random() * ceiling);
    this.#pausedUntil = Math.max(this.#pausedUntil, Date.now() + delay);
  }
}
