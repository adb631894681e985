/**
 * Throttling and transient failures of the ECI API, retried with back-off before any error
 * reaches the provider (the SDK retries nothing by default); what still fails is sorted into the
 * provider errors the core understands. A candidate for the kit: every cloud provider needs the
 * same loop around its SDK.
 * @module
 */
import {
  type Clock,
  InvalidInputError,
  NotFoundError,
  raceSignal,
  TransientError,
} from "../../../provider/mod.ts";

/** An error the SDK threw for an API error answer: its code and HTTP status. */
export function apiErrorOf(err: unknown): { code: string; status?: number } | undefined {
  if (!(err instanceof Error) || !("code" in err)) return undefined;
  const code = String((err as { code?: unknown }).code ?? "");
  const data = (err as { data?: { statusCode?: unknown } }).data;
  const status = typeof data?.statusCode === "number" ? data.statusCode : undefined;
  return code ? { code, status } : undefined;
}

/** True for ECI's throttling codes (`Throttling`, `Throttling.User`, `Throttling.Api`...). */
export function isThrottling(err: unknown): boolean {
  return /^Throttling(\.|$)/.test(apiErrorOf(err)?.code ?? "");
}

function isRetryable(err: unknown): boolean {
  const api = apiErrorOf(err);
  if (!api) return !(err instanceof DOMException && err.name === "AbortError");
  return isThrottling(err) || (api.status ?? 0) >= 500 || api.code === "ServiceUnavailable";
}

/** Options for {@link withRetry}. */
export interface RetryOptions {
  /** Sleeps between attempts. */
  clock: Clock;
  signal?: AbortSignal;
  /** Attempts in all (default 5). */
  attempts?: number;
  /** The first back-off (default 200 ms), doubled per attempt with jitter, at most 5 s. */
  baseMs?: number;
}

/**
 * Runs `call` until it succeeds, retrying throttling, 5xx and network errors with exponential
 * back-off and full jitter; then {@link eciError}.
 */
export async function withRetry<T>(
  what: string,
  call: () => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const attempts = options.attempts ?? 5;
  const base = options.baseMs ?? 200;
  for (let attempt = 1;; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await raceSignal(call(), options.signal);
    } catch (err) {
      if (options.signal?.aborted) throw err;
      if (attempt >= attempts || !isRetryable(err)) throw eciError(what, err);
      const ceiling = Math.min(5000, base * 2 ** (attempt - 1));
      await options.clock.sleep(ceiling / 2 + Math.random() * ceiling / 2, options.signal);
    }
  }
}

const NOT_FOUND = /NotFound|NotExist|InvalidContainerGroupId|IncorrectStatus\.NotFound/i;
const INVALID = /^(InvalidParameter|MissingParameter|IncorrectParameter|InvalidParam|Invalid)/;

/**
 * An SDK error as a provider error: a missing group is {@link NotFoundError}; a request ECI
 * refuses as invalid is {@link InvalidInputError} (the pod fails with ECI's message); the rest —
 * throttling past the retries, 5xx, network, permissions an operator can fix, stock shortages —
 * is {@link TransientError}, retried by the core with back-off.
 */
export function eciError(what: string, err: unknown): Error {
  const api = apiErrorOf(err);
  const message = `${what}: ${api?.code ?? (err instanceof Error ? err.name : "Error")}: ${
    err instanceof Error ? err.message : String(err)
  }`;
  if (api && NOT_FOUND.test(api.code)) return new NotFoundError(message, { cause: err });
  if (api && INVALID.test(api.code) && !isThrottling(err)) {
    return new InvalidInputError(message, { cause: err });
  }
  return new TransientError(message, { cause: err, retryAfterMs: 2000 });
}
