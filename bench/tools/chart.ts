/**
 * The chart of scenario 1: for each size, pods Running against seconds since the first create,
 * one line per subject, drawn from the run's own samples into bench/reports/scenario1.png.
 * @module
 */
import { Raster, type Rgb } from "./png.ts";
import type { RunResult } from "../scenarios/scenarios.ts";
import type { SubjectName } from "./subjects.ts";

const COLOURS: Record<SubjectName, Rgb> = {
  vkubelet: [0, 110, 200],
  peer: [220, 90, 20],
  floor: [90, 90, 90],
};
const INK: Rgb = [30, 30, 30];
const GRID: Rgb = [225, 225, 225];

function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
}

/**
 * `10 000`: thousands grouped with a space (as SI writes them), since the chart's comma is a
 * 5×7 glyph that reads as a decimal comma ("10,000" as ten).
 */
export function groupThousands(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, " ");
}

/**
 * Where a subject's curve ends when it stopped before all `n` pods were Running (its phase timed
 * out or it exited): the time the bench stopped waiting and how many made it; else undefined.
 */
export function stoppedEarly(r: RunResult): { t: number; done: number } | undefined {
  if (r.create.done >= r.n) return undefined;
  const last = r.create.curve.at(-1);
  const t = Math.max(last?.[0] ?? 0, Number.isFinite(r.create.seconds) ? r.create.seconds : 0);
  return { t, done: last?.[1] ?? 0 };
}

function label(n: number): string {
  return n >= 1000 && n % 1000 === 0
    ? `${n / 1000}K`
    : Number.isInteger(n)
    ? String(n)
    : n.toFixed(1);
}

function panel(img: Raster, x0: number, y0: number, w: number, h: number, runs: RunResult[]): void {
  const n = runs[0].n;
  const left = 70, bottom = 50, top = 40, right = 20;
  const px = x0 + left, py = y0 + top, pw = w - left - right, ph = h - top - bottom;
  const tMax = Math.max(
    1,
    ...runs.flatMap((r) => r.create.curve.map(([t]) => t)),
    ...runs.map((r) => stoppedEarly(r)?.t ?? 0),
  );
  const xStep = niceStep(tMax, 5);
  const xMax = Math.ceil(tMax / xStep) * xStep;
  const yStep = niceStep(n, 4);
  const toX = (t: number) => px + (t / xMax) * pw;
  const toY = (c: number) => py + ph - (c / n) * ph;
  img.text(px, y0 + 12, `SCENARIO 1: N = ${groupThousands(n)}`, INK, 2);
  for (let t = 0; t <= xMax + 1e-9; t += xStep) {
    img.line(toX(t), py, toX(t), py + ph, GRID);
    const text = label(t);
    img.text(toX(t) - Raster.textWidth(text) / 2, py + ph + 8, text, INK);
  }
  for (let c = 0; c <= n; c += yStep) {
    img.line(px, toY(c), px + pw, toY(c), GRID);
    const text = label(c);
    img.text(px - 8 - Raster.textWidth(text), toY(c) - 7, text, INK);
  }
  img.line(px, py, px, py + ph, INK);
  img.line(px, py + ph, px + pw, py + ph, INK);
  img.text(px + pw / 2 - Raster.textWidth("SECONDS") / 2, py + ph + 30, "SECONDS", INK);
  for (const r of runs) {
    const curve: [number, number][] = [[0, 0], ...r.create.curve];
    for (let i = 1; i < curve.length; i++) {
      const [t0, c0] = curve[i - 1];
      const [t1, c1] = curve[i];
      img.line(toX(t0), toY(c0), toX(t1), toY(c1), COLOURS[r.subject], 3);
    }
    const stop = stoppedEarly(r);
    if (stop) markStop(img, toX(stop.t), toY(stop.done), curve.at(-1)!, toX, toY, r, stop.done);
  }
}

/** Flat line from the last pod Running to where the bench stopped, a cross and "STOPPED d/N". */
function markStop(
  img: Raster,
  x: number,
  y: number,
  last: [number, number],
  toX: (t: number) => number,
  toY: (c: number) => number,
  r: RunResult,
  done: number,
): void {
  const colour = COLOURS[r.subject];
  img.line(toX(last[0]), toY(last[1]), x, y, colour, 1);
  img.line(x - 6, y - 6, x + 6, y + 6, colour, 3);
  img.line(x - 6, y + 6, x + 6, y - 6, colour, 3);
  const text = `STOPPED ${groupThousands(done)}/${groupThousands(r.n)}`;
  const width = Raster.textWidth(text);
  img.text(Math.max(0, Math.min(x - width / 2, img.width - width)), y - 26, text, colour);
}

/** Draws the chart; sizes side by side, a legend on top. */
export async function writeChart(path: string, results: RunResult[]): Promise<void> {
  const sizes = [...new Set(results.map((r) => r.n))].sort((a, b) => a - b);
  const panelW = 520, panelH = 400, legendH = 50;
  const img = new Raster(Math.max(2, sizes.length) * panelW, panelH + legendH);
  let x = 20;
  img.text(x, 16, "PODS RUNNING OVER TIME:", INK, 2);
  x += Raster.textWidth("PODS RUNNING OVER TIME: ") + 10;
  for (const subject of Object.keys(COLOURS) as SubjectName[]) {
    if (!results.some((r) => r.subject === subject)) continue;
    img.rect(x, 20, 30, 6, COLOURS[subject]);
    x += 40;
    x += img.text(x, 16, subject === "peer" ? "VIRTUAL-KUBELET" : subject, INK, 2) + 30;
  }
  sizes.forEach((n, i) => {
    const runs = results.filter((r) => r.n === n && r.create.curve.length);
    if (runs.length) panel(img, i * panelW, legendH, panelW, panelH, runs);
  });
  await Deno.writeFile(path, img.toPng());
}
