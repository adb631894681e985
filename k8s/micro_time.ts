/**
 * MicroTime: the RFC 3339 time with exactly six fractional digits that fields such as a Lease's
 * `renewTime` require. The apiserver parses them with the layout
 * `2006-01-02T15:04:05.000000Z07:00` (kubernetes/apimachinery
 * `pkg/apis/meta/v1/micro_time.go`), while `Date.prototype.toISOString()` gives three digits.
 * @module
 */

/** Formats a time (a `Date` or milliseconds since the epoch) as a MicroTime string in UTC. */
export function formatMicroTime(time: Date | number): string {
  const date = typeof time === "number" ? new Date(time) : time;
  if (Number.isNaN(date.getTime())) throw new RangeError("formatMicroTime: invalid date");
  // toISOString is `YYYY-MM-DDTHH:mm:ss.sssZ`; milliseconds are the finest a Date holds.
  return `${date.toISOString().slice(0, 23)}000Z`;
}

/**
 * Formats a time as a plain `metav1.Time` (RFC 3339, whole seconds, UTC). Times of the same
 * second are one string: 10,000 pods started over half a minute hold their ~90,000 condition,
 * start and container times in a few dozen strings instead of one each (bench/reports/why.md).
 *
 * @example Usage
 * ```ts
 * import { formatTime } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(formatTime(Date.parse("2026-12-01T10:00:00.750Z")), "2026-12-01T10:00:00Z");
 * ```
 */
export function formatTime(time: Date | number): string {
  const ms = typeof time === "number" ? time : time.getTime();
  if (Number.isNaN(ms)) throw new RangeError("formatTime: invalid date");
  const second = Math.floor(ms / 1000);
  let text = recentSeconds.get(second);
  if (text === undefined) {
    text = `${new Date(second * 1000).toISOString().slice(0, 19)}Z`;
    if (recentSeconds.size >= RECENT_SECONDS) {
      recentSeconds.delete(recentSeconds.keys().next().value!);
    }
    recentSeconds.set(second, text);
  }
  return text;
}

/** How many seconds' strings {@link formatTime} keeps (the oldest written leaves first). */
const RECENT_SECONDS = 128;
const recentSeconds = new Map<number, string>();

/** Parses a MicroTime or Time string into milliseconds since the epoch (sub-millisecond digits dropped). */
export function parseKubeTime(value: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new RangeError(`not an RFC 3339 time: ${JSON.stringify(value)}`);
  return ms;
}
