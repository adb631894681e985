/**
 * The soak's figures: samples of the kubelet over time, the windows compared (the first and last
 * 10 minutes of a run, shorter when the run is), and the growth of the mean between them against
 * the goal of issue 25 (< 5% at a constant pod count).
 * @module
 */

/** One sample of the kubelet process. */
export interface SoakSample {
  /** Seconds since the churn started. */
  t: number;
  /** The rollout round in progress (0: the first N pods being created). */
  round: number;
  rssMiB: number;
  /** `vkubelet_heap_used_bytes` from its metrics listener, in MiB; NaN when unread. */
  heapUsedMiB: number;
  /** Resident `[heap]` mapping (glibc malloc's main arena), in MiB; see `proc.ts`. */
  brkMiB?: number;
  /** CPU used since the previous sample, in % of one core. */
  cpuPercent: number;
}

/** A numeric field of {@link SoakSample}. */
export type SoakField = "rssMiB" | "heapUsedMiB" | "brkMiB" | "cpuPercent";

/** The goal: the mean may grow less than this between the first and the last window. */
export const GROWTH_GOAL = 0.05;

/** Parses `90s`, `15m`, `1h` or a bare number of seconds; throws a RangeError otherwise. */
export function parseDuration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(text.trim());
  if (!m || Number(m[1]) <= 0) {
    throw new RangeError(`"${text}" is not a duration; write it like 90s, 15m or 1h`);
  }
  return Number(m[1]) * { s: 1, m: 60, h: 3600 }[(m[2] ?? "s") as "s" | "m" | "h"];
}

/** The length of each compared window: 10 minutes, or a third of a run shorter than 30. */
export function windowSeconds(durationSeconds: number): number {
  return Math.min(600, durationSeconds / 3);
}

/** Mean of a field over the samples with `from <= t <= to`; NaN when none has a number. */
export function meanOver(
  samples: SoakSample[],
  field: SoakField,
  from: number,
  to: number,
): number {
  const values = samples.filter((s) => s.t >= from && s.t <= to).map((s) => s[field])
    .filter((v): v is number => Number.isFinite(v));
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

/** A field's mean in the first and last window and the growth between them. */
export interface WindowGrowth {
  first: number;
  last: number;
  /** (last - first) / first; NaN when either mean is missing or the first is 0. */
  growth: number;
}

/** Compares the first and last `window` seconds of samples spanning `duration` seconds. */
export function windowGrowth(
  samples: SoakSample[],
  field: SoakField,
  duration: number,
  window = windowSeconds(duration),
): WindowGrowth {
  const first = meanOver(samples, field, 0, window);
  const last = meanOver(samples, field, duration - window, duration);
  const growth = first > 0 ? (last - first) / first : NaN;
  return { first, last, growth };
}

/** `+3.2%` / `-0.4%`, or `–` for an unknown growth. */
export function formatGrowth(growth: number): string {
  if (!Number.isFinite(growth)) return "–";
  return `${growth >= 0 ? "+" : "−"}${Math.abs(growth * 100).toFixed(1)}%`;
}
