/**
 * Seeded fuzzing with a time budget, for the parser fuzz tests that run in the normal suite:
 * a fixed seed makes every run walk the same sequence of inputs (a failure names its seed and
 * index, so it can be replayed), and the budget bounds the time, not the count.
 * `VKUBELET_FUZZ_SECONDS` changes the budget (longer runs, or 1 for a quick check).
 * @module
 */

/** mulberry32: small, fast, reproducible. */
export function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n) };
}

/** A seeded generator. */
export type Random = ReturnType<typeof random>;

/** The budget in milliseconds: `VKUBELET_FUZZ_SECONDS`, else `seconds`. */
export function fuzzBudgetMs(seconds: number): number {
  const fromEnv = Number(Deno.env.get("VKUBELET_FUZZ_SECONDS"));
  return (Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : seconds) * 1000;
}

/** Calls `round(i)` for i = 0, 1, ... until `budgetMs` has passed; returns the count. */
export async function forBudget(
  budgetMs: number,
  round: (i: number) => void | Promise<void>,
): Promise<number> {
  const until = performance.now() + budgetMs;
  let i = 0;
  while (performance.now() < until) await round(i++);
  return i;
}
