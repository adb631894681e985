/**
 * Go-style durations (`300ms`, `10s`, `1m30s`, `2h`), as virtual-kubelet's and the kubelet's
 * flags take them (Go `time.ParseDuration`), converted to and from milliseconds.
 * @module
 */

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;

/** Milliseconds in a Go-style duration; `undefined` if it is not one. `"0"` is zero. */
export function parseDuration(text: string): number | undefined {
  const input = text.trim();
  if (input === "0") return 0;
  if (input === "") return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < input.length) {
    const start = PART.lastIndex;
    const match = PART.exec(input);
    if (!match || match.index !== start) return undefined;
    total += Number(match[1]) * UNIT_MS[match[2]];
  }
  return total;
}

/** Formats milliseconds the way Go prints a duration: `1m30s`, `10s`, `250ms`, `0s`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  if (ms < 1000) return `${ms}ms`;
  let rest = ms;
  let out = "";
  const hours = Math.floor(rest / 3_600_000);
  if (hours) out += `${hours}h`;
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  if (minutes || (hours && rest)) out += `${minutes}m`;
  rest -= minutes * 60_000;
  if (rest) out += `${rest / 1000}s`;
  return out;
}
