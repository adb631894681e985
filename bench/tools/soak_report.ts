/**
 * Writes the soak's report (SOAK.md) and chart (soak.png) from a {@link SoakResult}: the growth
 * of the mean RSS and heap in use between the first and the last window against the < 5% goal,
 * the rounds, and RSS, heap and CPU over time.
 * @module
 */
import { VERSION } from "../../app/config/config.ts";
import { kubernetesVersion } from "../../tools/cluster/build.ts";
import { Raster, type Rgb } from "./png.ts";
import type { SoakResult } from "../scenarios/soak.ts";
import {
  formatGrowth,
  GROWTH_GOAL,
  type SoakSample,
  windowGrowth,
  windowSeconds,
} from "./soak_stats.ts";

const INK: Rgb = [30, 30, 30];
const GRID: Rgb = [225, 225, 225];
const WINDOW: Rgb = [255, 243, 205];
const SERIES: {
  field: "rssMiB" | "heapUsedMiB" | "brkMiB" | "cpuPercent";
  label: string;
  colour: Rgb;
}[] = [
  { field: "rssMiB", label: "RSS", colour: [0, 110, 200] },
  { field: "brkMiB", label: "MALLOC HEAP", colour: [200, 120, 0] },
  { field: "heapUsedMiB", label: "JS HEAP USED", colour: [20, 150, 60] },
  { field: "cpuPercent", label: "CPU", colour: [90, 90, 90] },
];

function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
}

/** One panel: the given series against minutes, the compared windows shaded. */
function panel(
  img: Raster,
  y0: number,
  h: number,
  title: string,
  series: typeof SERIES,
  samples: SoakSample[],
  duration: number,
): void {
  const left = 70, right = 20, top = 30, bottom = 40;
  const px = left, py = y0 + top, pw = img.width - left - right, ph = h - top - bottom;
  const minutes = duration / 60;
  const xStep = niceStep(Math.max(minutes, 1), 6);
  const xMax = Math.ceil(minutes / xStep) * xStep;
  const yTop = Math.max(
    1,
    ...samples.flatMap((s) => series.map((c) => s[c.field] ?? NaN)).filter(Number.isFinite),
  );
  const yStep = niceStep(yTop, 4);
  const yMax = Math.ceil(yTop / yStep) * yStep;
  const toX = (m: number) => px + (m / xMax) * pw;
  const toY = (v: number) => py + ph - (v / yMax) * ph;
  const window = windowSeconds(duration) / 60;
  img.rect(toX(0), py, toX(window) - toX(0), ph, WINDOW);
  img.rect(toX(minutes - window), py, toX(minutes) - toX(minutes - window), ph, WINDOW);
  img.text(px, y0 + 6, title, INK, 2);
  for (let m = 0; m <= xMax + 1e-9; m += xStep) {
    img.line(toX(m), py, toX(m), py + ph, GRID);
    const text = String(Math.round(m * 10) / 10);
    img.text(toX(m) - Raster.textWidth(text) / 2, py + ph + 8, text, INK);
  }
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    img.line(px, toY(v), px + pw, toY(v), GRID);
    const text = String(v);
    img.text(px - 8 - Raster.textWidth(text), toY(v) - 7, text, INK);
  }
  img.line(px, py, px, py + ph, INK);
  img.line(px, py + ph, px + pw, py + ph, INK);
  img.text(px + pw / 2 - Raster.textWidth("MINUTES") / 2, py + ph + 26, "MINUTES", INK);
  for (const s of series) {
    const points = samples.filter((p) => Number.isFinite(p[s.field]));
    for (let i = 1; i < points.length; i++) {
      const a = points[i - 1], b = points[i];
      img.line(
        toX(a.t / 60),
        toY(a[s.field] ?? NaN),
        toX(b.t / 60),
        toY(b[s.field] ?? NaN),
        s.colour,
        3,
      );
    }
  }
}

/** Draws RSS and heap used (MiB) above CPU (% of a core), over minutes of the soak. */
export function drawSoakChart(result: SoakResult): Uint8Array {
  const img = new Raster(900, 620);
  let x = 20;
  for (const s of SERIES) {
    img.rect(x, 20, 30, 6, s.colour);
    x += 40;
    x += img.text(x, 16, s.label, INK, 2) + 30;
  }
  img.rect(x, 14, 30, 18, WINDOW);
  img.text(x + 40, 16, "WINDOWS COMPARED", INK, 2);
  const duration = result.flags.seconds;
  const title = `${result.flags.pods} PODS ROLLED EVERY ${result.flags.rollSeconds} S`;
  panel(img, 50, 340, `MIB: ${title}`, SERIES.slice(0, 3), result.samples, duration);
  panel(img, 390, 230, "CPU: % OF ONE CORE", SERIES.slice(3), result.samples, duration);
  return img.toPng();
}

const f1 = (v: number) => Number.isFinite(v) ? v.toFixed(1) : "–";

/** The report's lines. */
export function soakReport(result: SoakResult): string[] {
  const { flags, samples } = result;
  const duration = flags.seconds;
  const window = windowSeconds(duration);
  const rss = windowGrowth(samples, "rssMiB", duration);
  const heap = windowGrowth(samples, "heapUsedMiB", duration);
  const cpu = windowGrowth(samples, "cpuPercent", duration);
  const brk = windowGrowth(samples, "brkMiB", duration);
  const verdict = (g: number) =>
    !Number.isFinite(g) ? "not measured" : g < GROWTH_GOAL ? "met" : "**not met**";
  const rolled = result.rounds.filter(Number.isFinite);
  const late = result.rounds.length - rolled.length;
  const lines = [
    "# vkubelet soak",
    "",
    `Written by \`deno task bench --soak\` (bench/scenarios/soak.ts) from one run started ${result.startedAt};`,
    "the chart is `soak.png`. Do not edit by hand: run the soak again.",
    "",
    `- ${flags.pods} pods (one Deployment, its template changed every ${flags.rollSeconds} s, so`,
    `  every pod is replaced each round) for ${
      f1(duration / 60)
    } min: ${result.rounds.length} rounds,`,
    `  about ${(result.rounds.length * flags.pods).toLocaleString("en")} pods created and deleted`,
    `- vkubelet ${VERSION} (Deno ${Deno.version.deno}, mock provider, client-side limit ${
      flags.qps === undefined
        ? "as shipped (50/s, burst 100)"
        : `${flags.qps}/s, burst ${flags.qps * 2}`
    })`,
    `- control plane: Kubernetes ${kubernetesVersion()}, ${
      flags.cluster
        ? `the running cluster "${flags.cluster}", shared with other work`
        : "a fresh copy"
    }`,
    `- machine: ${result.machine.cores} cores (${result.machine.cpuModel}), ${result.machine.memoryGiB} GiB;`,
    `  load average at the start ${result.load[0]}, at the end ${result.load[1]}`,
    `- sampled every ${flags.sampleSeconds} s: RSS (\`VmRSS\`), heap in use`,
    "  (`vkubelet_heap_used_bytes` from `--metrics-addr`), CPU (utime + stime)",
    ...(result.exitCode !== undefined
      ? [`- **vkubelet exited early** (code ${result.exitCode})`]
      : []),
    "",
    "## Growth of the mean",
    "",
    `First and last ${f1(window / 60)} min compared (10 min in a run of 30 min or more).`,
    "",
    "| | first window | last window | growth | goal < 5% |",
    "| --- | ---: | ---: | ---: | --- |",
    `| RSS (MiB) | ${f1(rss.first)} | ${f1(rss.last)} | ${formatGrowth(rss.growth)} | ${
      verdict(rss.growth)
    } |`,
    `| heap used (MiB) | ${f1(heap.first)} | ${f1(heap.last)} | ${formatGrowth(heap.growth)} | ${
      verdict(heap.growth)
    } |`,
    `| malloc \`[heap]\` (MiB) | ${f1(brk.first)} | ${f1(brk.last)} | ${
      formatGrowth(brk.growth)
    } | (information) |`,
    `| CPU (% of one core) | ${f1(cpu.first)} | ${f1(cpu.last)} | ${
      formatGrowth(cpu.growth)
    } | (information) |`,
    "",
    `Peak RSS (\`VmHWM\`): ${
      f1(result.peakMiB)
    } MiB. Rounds rolled out within their ${flags.rollSeconds} s: ${rolled.length} of ${result.rounds.length}${
      late ? ` (${late} late)` : ""
    }; time to roll out, median ${f1(median(rolled))} s, worst ${f1(Math.max(...rolled))} s.`,
    "",
  ];
  const byRound = (field: "rssMiB" | "heapUsedMiB") =>
    [...new Set(samples.map((x) => x.round))].map((r) =>
      Math.max(...samples.filter((x) => x.round === r).map((x) => x[field]))
    ).map((v) => Number.isFinite(v) ? v.toFixed(0) : "–").join(", ");
  lines.push(
    "Highest sample in each round (0 = the pods' creation, before any was deleted), MiB: RSS " +
      `${byRound("rssMiB")}; heap used ${byRound("heapUsedMiB")}.`,
    "",
  );
  const rest = result.rest;
  if (rest?.full) {
    const per1000 = (a: number, b: number) => f1(((b - a) / flags.pods) * 1000);
    lines.push(
      `At rest (no churn): ${f1(rest.empty.rssMiB)} MiB RSS (heap used ${
        f1(rest.empty.heapUsedMiB)
      } MiB) with no pods, ${f1(rest.full.rssMiB)} MiB (heap used ${
        f1(rest.full.heapUsedMiB)
      } MiB) with all ${flags.pods} pods, ${
        f1(flags.rollSeconds - result.rounds[0])
      } s after they were all Running: ${per1000(rest.empty.rssMiB, rest.full.rssMiB)} MiB RSS (${
        per1000(rest.empty.heapUsedMiB, rest.full.heapUsedMiB)
      } MiB of heap) per 1,000 pods.`,
      "",
    );
  }
  if (result.heapSnapshots.length) {
    lines.push(
      "Heap snapshots (the inspector was on for this run):",
      "",
      ...result.heapSnapshots.map((h) =>
        `- after round ${h.round}: heap used ${f1(h.heapUsedMiB)} MiB, RSS ${f1(h.rssMiB)} MiB`
      ),
      "",
    );
  }
  return lines;
}

function median(values: number[]): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Writes `dir/SOAK.md` (with `dir/soak_notes.md` appended, if there is one) and `dir/soak.png`. */
export async function writeSoakReport(dir: string, result: SoakResult): Promise<void> {
  const notes = await Deno.readTextFile(new URL("../reports/soak_notes.md", import.meta.url)).catch(
    () => "",
  );
  await Deno.writeTextFile(`${dir}SOAK.md`, [...soakReport(result), notes.trim(), ""].join("\n"));
  await Deno.writeFile(`${dir}soak.png`, drawSoakChart(result));
}
