/**
 * Azure Resource Manager's request limits per subscription, as the ACI emulator enforces them:
 * the token buckets of Microsoft's "Understand how Azure Resource Manager throttles requests"
 * (learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling,
 * the regional throttling every subscription moved to in 2024): reads 250 tokens refilled at 25
 * a second, writes 200 at 10, deletes 200 at 10, per subscription and principal (the tests have
 * one principal). A request without a token is answered 429 with `Retry-After` (seconds until a
 * token); every answer carries `x-ms-ratelimit-remaining-subscription-{reads,writes,deletes}`.
 * This is test code modelling the documented behaviour; it is not Azure.
 * @module
 */

/** An operation type ARM counts apart. */
export type ArmOperation = "reads" | "writes" | "deletes";

/** One bucket's size and refill a second. */
export interface BucketSpec {
  size: number;
  perSecond: number;
}

/** The documented limits (see the module doc). */
export const ARM_LIMITS: Record<ArmOperation, BucketSpec> = {
  reads: { size: 250, perSecond: 25 },
  writes: { size: 200, perSecond: 10 },
  deletes: { size: 200, perSecond: 10 },
};

/** What a request was told. */
export interface ArmVerdict {
  ok: boolean;
  operation: ArmOperation;
  /** Whole tokens left after this request. */
  remaining: number;
  /** When refused: seconds until a token. */
  retryAfterS?: number;
}

/** The operation type of an HTTP method, as ARM counts it. */
export function operationOf(method: string): ArmOperation {
  if (method === "GET" || method === "HEAD") return "reads";
  return method === "DELETE" ? "deletes" : "writes";
}

/** ARM's buckets for each subscription. */
export class ArmLimits {
  readonly #specs: Record<ArmOperation, BucketSpec>;
  readonly #buckets = new Map<string, { tokens: number; atMs: number }>();
  /** Requests refused, by operation type. */
  readonly refused: Record<ArmOperation, number> = { reads: 0, writes: 0, deletes: 0 };

  constructor(specs: Record<ArmOperation, BucketSpec> = ARM_LIMITS) {
    this.#specs = specs;
  }

  /** Takes a token for `method` in `subscription` at `nowMs`, or says when to come back. */
  take(subscription: string, method: string, nowMs: number): ArmVerdict {
    const operation = operationOf(method);
    const spec = this.#specs[operation];
    const key = `${subscription}/${operation}`;
    const bucket = this.#buckets.get(key) ?? { tokens: spec.size, atMs: nowMs };
    bucket.tokens = Math.min(
      spec.size,
      bucket.tokens + ((nowMs - bucket.atMs) / 1000) * spec.perSecond,
    );
    bucket.atMs = nowMs;
    this.#buckets.set(key, bucket);
    if (bucket.tokens < 1) {
      this.refused[operation]++;
      const retryAfterS = Math.max(1, Math.ceil((1 - bucket.tokens) / spec.perSecond));
      return { ok: false, operation, remaining: 0, retryAfterS };
    }
    bucket.tokens -= 1;
    return { ok: true, operation, remaining: Math.floor(bucket.tokens) };
  }
}
