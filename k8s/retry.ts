/**
 * When and how long to wait before sending a request again.
 *
 * Like client-go (`rest/request.go`, `checkWait` and `IsRetryableResponse`): 429 is always
 * retried because the apiserver did not act on the request; 5xx is retried when the apiserver
 * sent `Retry-After`, or for reads, which are safe to repeat.
 * @module
 */
import { jitter } from "../base/clock.ts";

/** Tunables for retries of throttled or failed requests. */
export interface RetryPolicy {
  /** Retries after the first attempt; 0 turns retrying off. */
  maxRetries: number;
  /** First backoff when the apiserver gives no `Retry-After`. */
  initialBackoffMs: number;
  /** Longest wait between attempts, whatever `Retry-After` says. */
  maxBackoffMs: number;
}

/** Defaults: up to 5 retries, 250 ms doubling to at most 30 s. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 5,
  initialBackoffMs: 250,
  maxBackoffMs: 30_000,
};

const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Reads `Retry-After` (delay in seconds, or an HTTP date) as milliseconds from `now`;
 * `undefined` when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Whether an answer with this code to this method should be sent again. */
export function isRetryableStatus(code: number, method: string, hasRetryAfter: boolean): boolean {
  if (code === 429) return true;
  if (code < 500 || code === 501) return false;
  return hasRetryAfter || IDEMPOTENT.has(method.toUpperCase());
}

/** Whether a request whose connection failed should be sent again: only reads are. */
export function isRetryableConnectionFailure(method: string): boolean {
  return IDEMPOTENT.has(method.toUpperCase());
}

/**
 * Delay before retry number `attempt` (1-based): the apiserver's `Retry-After` if given,
 * otherwise exponential backoff with jitter; both capped at `maxBackoffMs`.
 */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  policy: RetryPolicy,
): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.maxBackoffMs);
  const base = policy.initialBackoffMs * 2 ** Math.max(0, attempt - 1);
  return Math.min(jitter(base, 0.2), policy.maxBackoffMs);
}
