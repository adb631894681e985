/**
 * Flags of `deno task bench --streaming` (bench/scenarios/streaming.ts), bounded so that a run stays
 * small: at most 1,000 MB per transfer, 500 round trips, 10 repeats, 10,000 pods.
 * @module
 */

/** What one streaming run measures, and how much. */
export interface StreamingFlags {
  /** MB (10^6 bytes) per exec and port-forward transfer. */
  mb: number;
  /** `kubectl exec -- true` round trips. */
  runs: number;
  /** Repeats of each transfer (the report shows the median). */
  repeat: number;
  /** MB of the log read with `kubectl logs -f`. */
  logMb: number;
  /** Pods behind `/stats/summary`. */
  pods: number;
  /** `/stats/summary` requests per path. */
  requests: number;
  /** Only rewrite STREAMING.md from the saved figures. */
  reportOnly: boolean;
}

const USAGE = `usage: deno task bench --streaming [options]
  --mb N          MB per exec -i cat and port-forward transfer (default 100, at most 1000)
  --runs N        kubectl exec -- true round trips (default 50, at most 500)
  --repeat N      repeats of each transfer; the median is reported (default 3, at most 10)
  --log-mb N      MB of log read with kubectl logs -f (default 20, at most 1000)
  --pods N        pods behind /stats/summary (default 1000, at most 10000)
  --requests N    /stats/summary requests per path (default 50, at most 1000)
  --report-only   rewrite STREAMING.md from bench/out/streaming.json`;

const LIMITS: Record<string, [keyof StreamingFlags, number]> = {
  "--mb": ["mb", 1000],
  "--runs": ["runs", 500],
  "--repeat": ["repeat", 10],
  "--log-mb": ["logMb", 1000],
  "--pods": ["pods", 10000],
  "--requests": ["requests", 1000],
};

/** Parses the flags after `--streaming`; throws a RangeError naming the bad one. */
export function parseStreamingFlags(args: string[]): StreamingFlags {
  const flags: StreamingFlags = {
    mb: 100,
    runs: 50,
    repeat: 3,
    logMb: 20,
    pods: 1000,
    requests: 50,
    reportOnly: false,
  };
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i].split("=", 2);
    if (name === "--streaming") continue;
    if (name === "--report-only") {
      flags.reportOnly = true;
      continue;
    }
    if (name === "--help" || name === "-h") throw new RangeError(USAGE);
    const limit = LIMITS[name];
    if (!limit) throw new RangeError(`unknown option ${args[i]}\n${USAGE}`);
    const n = Number(inline ?? args[++i]);
    if (!Number.isInteger(n) || n <= 0 || n > limit[1]) {
      throw new RangeError(`${name} needs a whole number from 1 to ${limit[1]}`);
    }
    (flags[limit[0]] as number) = n;
  }
  return flags;
}
