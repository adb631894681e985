import assert from "node:assert/strict";
import {
  formatGrowth,
  parseDuration,
  type SoakSample,
  windowGrowth,
  windowSeconds,
} from "../../bench/tools/soak_stats.ts";
import { parseSoakFlags } from "../../bench/tools/soak_flags.ts";

Deno.test("soak durations read as seconds, minutes or hours; anything else is refused", () => {
  assert.equal(parseDuration("60m"), 3600);
  assert.equal(parseDuration("1h"), 3600);
  assert.equal(parseDuration("90s"), 90);
  assert.equal(parseDuration("900"), 900);
  assert.throws(() => parseDuration("15 minutes"), /write it like 90s, 15m or 1h/);
  assert.throws(() => parseDuration("0m"), RangeError);
});

Deno.test("the soak compares 10-minute windows, a third of a shorter run", () => {
  assert.equal(windowSeconds(3600), 600);
  assert.equal(windowSeconds(900), 300);
});

function samples(values: number[], step: number): SoakSample[] {
  return values.map((v, i) => ({
    t: i * step,
    round: i,
    rssMiB: v,
    heapUsedMiB: i % 2 ? NaN : v / 2,
    cpuPercent: 5,
  }));
}

Deno.test("growth of the mean is the last window's mean over the first's", () => {
  // 0..900 s every 60 s: first window 0–300 s (6 samples), last 600–900 s (6 samples).
  const s = samples([
    100,
    100,
    100,
    100,
    100,
    100,
    130,
    130,
    110,
    110,
    110,
    110,
    110,
    110,
    110,
    110,
  ], 60);
  const rss = windowGrowth(s, "rssMiB", 900);
  assert.equal(rss.first, 100);
  assert.equal(rss.last, 110);
  assert.ok(Math.abs(rss.growth - 0.1) < 1e-9);
  assert.equal(formatGrowth(rss.growth), "+10.0%");
  // Unread samples (NaN) are left out, not counted as 0.
  assert.equal(windowGrowth(s, "heapUsedMiB", 900).first, 50);
  assert.equal(formatGrowth(-0.004), "−0.4%");
  assert.equal(formatGrowth(NaN), "–");
  assert.ok(Number.isNaN(windowGrowth([], "rssMiB", 900).growth));
});

Deno.test("soak flags: defaults, overrides, and heap snapshots only with an inspector", () => {
  const flags = parseSoakFlags(["--soak", "15m", "--pods=3000", "--roll-seconds", "120"]);
  assert.equal(flags.seconds, 900);
  assert.equal(flags.pods, 3000);
  assert.equal(flags.rollSeconds, 120);
  assert.equal(flags.sampleSeconds, 30);
  assert.equal(flags.qps, 500);
  assert.equal(parseSoakFlags(["--soak", "1h", "--qps", "shipped"]).qps, undefined);
  assert.throws(() => parseSoakFlags(["--soak", "1h", "--pods", "0"]), /--pods needs a positive/);
  assert.throws(() => parseSoakFlags(["--soak", "1h", "--bogus"]), /unknown soak option --bogus/);
  if (!Deno.env.get("VKBENCH_INSPECT")) {
    assert.throws(() => parseSoakFlags(["--soak", "1h", "--heap-at", "3"]), /VKBENCH_INSPECT/);
  }
});
