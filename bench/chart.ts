/**
 * The chart of scenario 1: for each size, pods Running against seconds since the first create,
 * one line per subject, drawn from the run's own samples into bench/scenario1.png.
 * @module
 */
import { Raster, type Rgb } from "./png.ts";
import type { RunResult } from "./scenarios.ts";
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
  const tMax = Math.max(1, ...runs.flatMap((r) => r.create.curve.map(([t]) => t)));
  const xStep = niceStep(tMax, 5);
  const xMax = Math.ceil(tMax / xStep) * xStep;
  const yStep = niceStep(n, 4);
  const toX = (t: number) => px + (t / xMax) * pw;
  const toY = (c: number) => py + ph - (c / n) * ph;
  img.text(px, y0 + 12, `SCENARIO 1, N = ${n.toLocaleString("en")}`, INK, 2);
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
  }
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
