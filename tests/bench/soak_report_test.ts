import assert from "node:assert/strict";
import { drawSoakChart, soakReport } from "../../bench/tools/soak_report.ts";
import type { SoakResult } from "../../bench/scenarios/soak.ts";

function result(rss: (t: number) => number): SoakResult {
  return {
    flags: { seconds: 900, pods: 300, rollSeconds: 60, sampleSeconds: 30, heapAt: [], qps: 500 },
    startedAt: "2026-12-01T16:00:00.000Z",
    machine: { cores: 2, memoryGiB: 24, cpuModel: "test", load: "9.00 9.00 9.00" },
    load: ["9.00 9.00 9.00", "10.00 10.00 10.00"],
    samples: Array.from({ length: 31 }, (_, i) => ({
      t: i * 30,
      round: Math.floor(i / 2),
      rssMiB: rss(i * 30),
      heapUsedMiB: 30,
      brkMiB: 20,
      cpuPercent: 10,
    })),
    rounds: [15, 31, NaN, 30],
    peakMiB: 190,
    heapSnapshots: [],
    rest: { empty: { rssMiB: 100, heapUsedMiB: 20 }, full: { rssMiB: 130, heapUsedMiB: 26 } },
  };
}

Deno.test("the soak report judges the growth of the mean against the 5% goal", () => {
  const growing = soakReport(result((t) => (t < 450 ? 150 : 180))).join("\n");
  assert.match(growing, /\| RSS \(MiB\) \| 150\.0 \| 180\.0 \| \+20\.0% \| \*\*not met\*\* \|/);
  assert.match(growing, /\| heap used \(MiB\) \| 30\.0 \| 30\.0 \| \+0\.0% \| met \|/);
  assert.match(growing, /First and last 5\.0 min compared/);
  assert.match(growing, /3 of 4 \(1 late\)/);
  // (130 - 100) MiB over 300 pods: 100 MiB per 1,000.
  assert.match(growing, /100\.0 MiB RSS \(20\.0 MiB of heap\) per 1,000 pods/);
  const flat = soakReport(result(() => 160)).join("\n");
  assert.match(flat, /\| RSS \(MiB\) \| 160\.0 \| 160\.0 \| \+0\.0% \| met \|/);
});

Deno.test("the soak chart is a PNG", () => {
  const png = drawSoakChart(result(() => 160));
  assert.deepEqual([...png.slice(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
});
