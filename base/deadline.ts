/**
 * A deadline as an AbortSignal driven by the injected clock, so fake clocks can expire it.
 * @module
 */
import { cancel } from "./cancel.ts";
import type { Clock } from "./clock.ts";

/** A signal that aborts after `ms` or when `parent` aborts; `cancel()` releases the timer. */
export function deadline(
  clock: Clock,
  ms: number,
  parent?: AbortSignal,
): { signal: AbortSignal; cancel(): void } {
  const expired = new AbortController();
  const stop = new AbortController();
  clock.sleep(ms, stop.signal).then(
    () => expired.abort(new DOMException(`Timed out after ${ms} ms`, "TimeoutError")),
    () => {},
  );
  const signal = parent ? AbortSignal.any([parent, expired.signal]) : expired.signal;
  return { signal, cancel: () => cancel(stop) };
}
