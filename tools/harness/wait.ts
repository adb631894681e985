/**
 * The tests' one polling wait: ask again until there is an answer or the time is up.
 * @module
 */

/** What a check answers while the awaited thing has not happened yet. */
type NotYet = undefined | null | false;

/**
 * Calls `check` every `stepMs` until it answers something other than `undefined`, `null` or
 * `false`, and returns that. A check that throws counts as "not yet"; its last error is in the
 * timeout's message, which names `what` and the time waited.
 */
export async function eventually<T>(
  what: string,
  check: () => T | NotYet | Promise<T | NotYet>,
  ms = 60_000,
  stepMs = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      const seconds = ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`;
      throw new Error(
        `timed out after ${seconds} waiting for ${what}${last ? `; last error: ${last}` : ""}`,
        { cause: last },
      );
    }
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
