/**
 * Keeps the aci provider's ARM reads inside Azure Resource Manager's read limit per subscription.
 * Microsoft's "Understand how Azure Resource Manager throttles requests"
 * (learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling)
 * gives, since subscriptions moved to regional throttling in 2024, a token bucket per
 * subscription, per service principal and per operation type: reads 250 tokens refilled at 25 a
 * second (writes and deletes 200 at 10 a second); the classic limit it replaced was 12,000 reads
 * an hour per ARM instance. This budget enforces the token bucket, with a bucket of its own that
 * stays below ARM's (default 20 reads a second, 100 at once), and takes two signals from ARM:
 * each read's `x-ms-ratelimit-remaining-subscription-reads` (tokens the subscription has left —
 * other clients of the identity use them too: below `reserve` vkubelet waits), and a 429's
 * `Retry-After`, which holds every read until it has passed. The SDK's own retry policy still
 * retries the throttled request after `Retry-After`.
 * @module
 */
import type { PipelinePolicy, PipelineResponse } from "@azure/core-rest-pipeline";

/** The response header ARM puts on reads: the subscription's read tokens left. */
export const REMAINING_READS = "x-ms-ratelimit-remaining-subscription-reads";

/** What {@link ArmReadBudget} is given. */
export interface ArmReadBudgetOptions {
  /** Reads a second, sustained. */
  perSecond: number;
  /** Reads at once after a quiet spell (the bucket's size). */
  burst: number;
  /** Tokens of the subscription's that vkubelet leaves to its other clients. Default 10. */
  reserve?: number;
  /** The time in ms (default `performance.now`); tests step it. */
  now?: () => number;
}

/** A token bucket for ARM reads; see the module doc. */
export class ArmReadBudget {
  readonly perSecond: number;
  readonly burst: number;
  readonly #reserve: number;
  readonly #now: () => number;
  #tokens: number;
  #at: number;
  #pausedUntil = 0;
  /** Reads let through, and 429s seen on reads. */
  readonly counts = { reads: 0, throttled: 0 };

  constructor(options: ArmReadBudgetOptions) {
    if (!(options.perSecond > 0) || !(options.burst >= 1)) {
      throw new RangeError("an ARM read budget needs perSecond > 0 and burst >= 1");
    }
    this.perSecond = options.perSecond;
    this.burst = options.burst;
    this.#reserve = options.reserve ?? 10;
    this.#now = options.now ?? (() => performance.now());
    this.#tokens = options.burst;
    this.#at = this.#now();
  }

  /** How long, in ms, the next read must wait (0: it may go now). */
  waitMs(): number {
    this.#refill();
    const paused = this.#pausedUntil - this.#now();
    const empty = this.#tokens >= 1 ? 0 : ((1 - this.#tokens) / this.perSecond) * 1000;
    return Math.max(0, paused, empty);
  }

  /** Waits until a read may go, then takes its token. */
  async take(signal?: SignalLike): Promise<void> {
    for (let wait = this.waitMs(); wait > 0; wait = this.waitMs()) {
      await sleep(wait, signal);
    }
    this.#tokens -= 1;
    this.counts.reads++;
  }

  /** ARM's count of the subscription's read tokens left: vkubelet keeps `reserve` of them free. */
  observeRemaining(remaining: number): void {
    this.#refill();
    this.#tokens = Math.min(this.#tokens, remaining - this.#reserve);
  }

  /**
   * A read was answered 429: no read goes before `ms` have passed, and the bucket starts empty
   * then, so that the reads waiting go one by one, not all at once into the next 429.
   */
  pause(ms: number): void {
    this.counts.throttled++;
    this.#refill();
    this.#pausedUntil = Math.max(this.#pausedUntil, this.#now() + ms);
    this.#tokens = Math.min(this.#tokens, 0);
    this.#at = this.#pausedUntil;
  }

  #refill(): void {
    const now = this.#now();
    if (now <= this.#at) return; // paused: nothing comes back before the pause ends
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#at) / 1000) * this.perSecond);
    this.#at = now;
  }
}

/** `Retry-After` (seconds or an HTTP date) in ms; ARM's `x-ms-retry-after-ms` first if sent. */
export function retryAfterMs(response: Pick<PipelineResponse, "headers">): number | undefined {
  const ms = Number(response.headers.get("x-ms-retry-after-ms") ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const text = response.headers.get("retry-after");
  if (text === undefined) return undefined;
  const seconds = Number(text);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * The SDK pipeline policy that sends every GET through `budget` and tells it what ARM answered;
 * placed after the retry phase, so that each try (the SDK's retries, long-running operations'
 * polls) takes a token.
 */
export function armReadLimitPolicy(budget: ArmReadBudget): PipelinePolicy {
  return {
    name: "vkubeletArmReadLimit",
    async sendRequest(request, next) {
      if (request.method !== "GET") return await next(request);
      await budget.take(request.abortSignal);
      const response = await next(request);
      const remaining = Number(response.headers.get(REMAINING_READS) ?? NaN);
      if (Number.isFinite(remaining)) budget.observeRemaining(remaining);
      if (response.status === 429) budget.pause(retryAfterMs(response) ?? 5000);
      return response;
    },
  };
}

/** An abort signal as the SDK hands it over (`AbortSignalLike`). */
type SignalLike = Pick<AbortSignal, "aborted" | "addEventListener" | "removeEventListener">;

function sleep(ms: number, signal?: SignalLike): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(abortError());
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error the SDK's policies take for "the caller aborted" (not retried). */
function abortError(): Error {
  const err = new Error("The operation was aborted.");
  err.name = "AbortError";
  return err;
}
