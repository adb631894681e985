/**
 * The streaming bench's figures and their report: a table of each measure through kubectl
 * against its direct path on the same machine, the ≥ 50% goal of issue 22 for exec and
 * port-forward throughput, and the CPU seconds each process spent on those transfers (where
 * the time goes). `renderStreaming` is pure; bench/scenarios/streaming.ts measures and writes the file.
 * @module
 */
import { mbPerSecond, quantile } from "./stream_transfer.ts";

/** The goal: throughput through kubectl at least this share of the direct path. */
export const THROUGHPUT_GOAL = 0.5;

/** One timed transfer and the CPU seconds each process spent during it. */
export interface Transfer {
  bytes: number;
  /** Milliseconds of each repeat. */
  ms: number[];
  /** CPU seconds per process (summed over the repeats), e.g. `{ kubectl: 1.2, vkubelet: 0.8 }`. */
  cpu: Record<string, number>;
}

/** A measure through kubectl and on its direct path. */
export interface Pair<T> {
  kubectl: T;
  direct: T;
}

/** Everything one streaming run measured. */
export interface StreamingResult {
  startedAt: string;
  finishedAt: string;
  /** /proc/loadavg (1, 5, 15 min) before and after the run. */
  load: { before: string; after: string };
  machine: string;
  flags: {
    mb: number;
    runs: number;
    repeat: number;
    logMb: number;
    pods: number;
    requests: number;
  };
  /** vkubelet ran with V8's inspector (a profiling run: its figures cost the inspector too). */
  profiled?: boolean;
  /** How kubectl's streams reach vkubelet. */
  protocol?: string;
  /** `kubectl exec -- true` against spawning `true` here, milliseconds. */
  roundTrip: Pair<number[]>;
  execCat: Pair<Transfer>;
  portForward: Pair<Transfer>;
  /** `kubectl logs -f` against the kubelet API read directly. */
  logs: Pair<{ lines: number; seconds: number }>;
  /** `/stats/summary` over TLS (kubectl column) against in-process, milliseconds. */
  stats: Pair<{ times: number[]; bytes: number }>;
}

/** Median MB/s of a transfer's repeats. */
export function transferRate(t: Transfer): number {
  return mbPerSecond(t.bytes, quantile(t.ms, 0.5));
}

/** "62%" of kubectl against direct, or "–" when the direct figure is not above zero. */
export function share(kubectl: number, direct: number): string {
  return direct > 0 ? `${Math.round((kubectl / direct) * 100)}%` : "–";
}

/** Whether a throughput through kubectl meets the goal; undefined without a direct figure. */
export function meetsGoal(kubectl: number, direct: number): boolean | undefined {
  return direct > 0 ? kubectl / direct >= THROUGHPUT_GOAL : undefined;
}

const ms = (v: number) => `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ms`;
const rate = (v: number, unit: string) =>
  `${v >= 100 ? Math.round(v).toLocaleString("en-US") : v.toFixed(1)} ${unit}`;
const p50p99 = (s: number[]) => `${ms(quantile(s, 0.5))} / ${ms(quantile(s, 0.99))}`;

/** The table rows: measure, through kubectl, direct, share, goal. */
export function streamingRows(r: StreamingResult): string[][] {
  const throughput = (label: string, pair: Pair<Transfer>) => {
    const [k, d] = [transferRate(pair.kubectl), transferRate(pair.direct)];
    const met = meetsGoal(k, d);
    return [
      label,
      rate(k, "MB/s"),
      rate(d, "MB/s"),
      share(k, d),
      met === undefined ? "–" : met ? "met (≥ 50%)" : "**not met** (< 50%)",
    ];
  };
  const lines = (x: { lines: number; seconds: number }) => x.lines / x.seconds;
  const mb = `${r.flags.mb} MB`;
  return [
    ["`exec -- true` round trip, p50 / p99", ...roundTripCells(r.roundTrip), "–", "–"],
    throughput(`\`exec -i cat\` of ${mb}`, r.execCat),
    throughput(`\`port-forward\` echo of ${mb}`, r.portForward),
    [
      `\`logs -f\` of ${r.flags.logMb} MB (100-byte lines)`,
      rate(lines(r.logs.kubectl), "lines/s"),
      rate(lines(r.logs.direct), "lines/s"),
      share(lines(r.logs.kubectl), lines(r.logs.direct)),
      "–",
    ],
    [
      `\`/stats/summary\`, ${r.flags.pods.toLocaleString("en-US")} pods, p50 / p99`,
      p50p99(r.stats.kubectl.times),
      p50p99(r.stats.direct.times),
      "–",
      "–",
    ],
  ];
}

function roundTripCells(pair: Pair<number[]>): string[] {
  return [p50p99(pair.kubectl), p50p99(pair.direct)];
}

/** CPU seconds per process for the two throughput measures, through kubectl and direct. */
export function cpuRows(r: StreamingResult): string[][] {
  const names = [
    ...new Set(
      [r.execCat, r.portForward].flatMap((
        p,
      ) => [...Object.keys(p.kubectl.cpu), ...Object.keys(p.direct.cpu)]),
    ),
  ];
  const cell = (t: Transfer, name: string) => (t.cpu[name] ?? 0).toFixed(2);
  const per = (t: Transfer) => (Object.values(t.cpu).reduce((a, b) => a + b, 0)).toFixed(2);
  const wall = (t: Transfer) => (t.ms.reduce((a, b) => a + b, 0) / 1000).toFixed(2);
  const columns = [
    r.execCat.kubectl,
    r.execCat.direct,
    r.portForward.kubectl,
    r.portForward.direct,
  ];
  return [
    ...names.map((name) => [name, ...columns.map((t) => cell(t, name))]),
    ["all of the above", ...columns.map(per)],
    ["wall-clock seconds", ...columns.map(wall)],
  ];
}

function table(head: string[], rows: string[][]): string[] {
  return [
    `| ${head.join(" | ")} |`,
    `|${head.map((_, i) => (i === 0 ? "---" : "--:")).join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ];
}

/** The STREAMING.md text: figures, CPU split and `notes` (the hand-written analysis). */
export function renderStreaming(r: StreamingResult, notes = ""): string {
  const f = r.flags;
  return [
    "# Streaming figures: through kubectl and vkubelet against the direct path",
    "",
    "Written by `deno task bench --streaming` (bench/scenarios/streaming.ts); do not edit the figures by hand,",
    "run it again. The analysis at the end is bench/reports/streaming_notes.md.",
    "",
    `- run: ${r.startedAt} to ${r.finishedAt}; ${r.machine}`,
    `- load average (1, 5, 15 min): ${r.load.before} before, ${r.load.after} after`,
    ...(r.profiled
      ? ["- **profiled run**: vkubelet ran with V8's inspector, which costs CPU of its own"]
      : []),
    ...(r.protocol ? [`- path: ${r.protocol}`] : []),
    `- sizes: ${f.mb} MB per transfer (MB = 10^6 bytes, one way), median of ${f.repeat} repeats;`,
    `  ${f.runs} exec round trips; a ${f.logMb} MB log; ${f.pods} pods, ${f.requests} stats requests`,
    "",
    ...table([
      "measure",
      "through kubectl",
      "direct",
      "share",
      `goal (≥ ${THROUGHPUT_GOAL * 100}%)`,
    ], streamingRows(r)),
    "",
    "Direct paths: `true` and `cat` spawned by the bench itself; the pod's echo server dialled on its",
    "loopback port; the container log read from the kubelet API with the apiserver's client",
    "certificate; `/stats/summary` answered in-process (`app.request`) against over TLS on loopback.",
    "",
    "## CPU seconds per process during the transfers (summed over the repeats)",
    "",
    ...table([
      "process",
      "exec -i cat, kubectl",
      "exec -i cat, direct",
      "port-forward, kubectl",
      "port-forward, direct",
    ], cpuRows(r)),
    "",
    "`bench` is the measuring process (it writes and reads the bytes); `kubectl` and `cat` are its",
    "children; `vkubelet` counts the `cat` it runs for the exec; `apiserver` proxies every stream.",
    ...(notes.trim() ? ["", notes.trim()] : []),
    "",
  ].join("\n");
}
