/**
 * zod fields a provider's config schema keeps needing: a duration written as text (`30s`, `3m`)
 * that the config receives in milliseconds, and a positive Kubernetes quantity (`64Gi`, `100`).
 * Each rejects bad input with a message that names an example of what it wants.
 * @module
 */
import { z } from "zod";
import { parseDuration } from "../base/duration.ts";
import { quantityToNumber } from "../k8s/quantity.ts";

/**
 * A duration such as `5s` (default `fallback`) parsed to milliseconds; below `minMs` (default
 * 1 ms, i.e. above zero) is refused.
 *
 * @example Usage
 * ```ts
 * import { durationField } from "@vkubelet/vkubelet/provider";
 * import { z } from "zod";
 * import assert from "node:assert/strict";
 * const schema = z.object({ interval: durationField("5s", 100) });
 * assert.deepEqual(schema.parse({}), { interval: 5000 });
 * assert.equal(schema.safeParse({ interval: "10ms" }).success, false);
 * ```
 */
export function durationField(
  fallback: string,
  minMs = 1,
): z.ZodPipe<z.ZodDefault<z.ZodString>, z.ZodTransform<number, string>> {
  return z.string().default(fallback).transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms < minMs) {
      const least = minMs <= 1 ? "above zero" : `of at least ${minMs}ms`;
      ctx.addIssue(
        `expected a duration ${least} such as ${fallback}, got ${JSON.stringify(text)}`,
      );
      return z.NEVER;
    }
    return ms;
  });
}

/**
 * A positive Kubernetes quantity such as `64Gi` (default `fallback`), kept as text.
 *
 * @example Usage
 * ```ts
 * import { positiveQuantityField } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(positiveQuantityField("100").parse(undefined), "100");
 * assert.equal(positiveQuantityField("100").safeParse("-1").success, false);
 * ```
 */
export function positiveQuantityField(fallback: string): z.ZodDefault<z.ZodString> {
  return z.string().default(fallback).refine((q) => (quantityToNumber(q) ?? -1) > 0, {
    error: (i) => `${JSON.stringify(i.input)} is not a positive Kubernetes quantity such as 64Gi`,
  });
}
