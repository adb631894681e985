import assert from "node:assert/strict";
import {
  meetsGoal,
  renderStreaming,
  share,
  type StreamingResult,
  transferRate,
} from "../../bench/tools/streaming_report.ts";
import { parseStreamingFlags } from "../../bench/tools/streaming_flags.ts";

const transfer = (ms: number[], cpu: Record<string, number>) => ({ bytes: 100e6, ms, cpu });

function result(kubectlMs: number[]): StreamingResult {
  return {
    startedAt: "2026-12-01T17:35:00Z",
    finishedAt: "2026-12-01T17:38:00Z",
    load: { before: "1.00 2.00 3.00", after: "2.50 2.00 3.00" },
    machine: "2 cores (test), 8 GiB",
    flags: { mb: 100, runs: 50, repeat: 3, logMb: 20, pods: 1000, requests: 50 },
    roundTrip: { kubectl: [120, 100, 140, 400], direct: [2, 1, 3, 1] },
    execCat: {
      kubectl: transfer(kubectlMs, { bench: 0.5, kubectl: 3, apiserver: 2, vkubelet: 4 }),
      direct: transfer([100, 100, 100], { bench: 0.4, cat: 0.1 }),
    },
    portForward: {
      kubectl: transfer([200, 250, 300], { bench: 0.5, apiserver: 1 }),
      direct: transfer([400, 400, 400], { bench: 0.5 }),
    },
    logs: { kubectl: { lines: 200_000, seconds: 4 }, direct: { lines: 200_000, seconds: 1 } },
    stats: {
      kubectl: { times: [30, 40, 50], bytes: 1e6 },
      direct: { times: [10, 20], bytes: 1e6 },
    },
  };
}

Deno.test("a transfer's rate is its median repeat in MB/s", () => {
  assert.equal(transferRate(transfer([1000, 4000, 2000], {})), 50);
});

Deno.test("the goal is met at half the direct rate and not below; no ratio against zero", () => {
  assert.equal(meetsGoal(50, 100), true);
  assert.equal(meetsGoal(49.9, 100), false);
  assert.equal(meetsGoal(10, 0), undefined);
  assert.equal(share(25, 100), "25%");
  assert.equal(share(25, 0), "–");
});

Deno.test("the report flags exec throughput below half of direct and shows where CPU went", () => {
  // exec: 100 MB in 2.5 s (40 MB/s) against 1,000 MB/s direct; port-forward 400 against 250.
  const text = renderStreaming(result([2500, 2000, 3000]), "## Where the time goes\n\nkubectl.");
  const row = (start: string) => text.split("\n").find((l) => l.startsWith(`| ${start}`)) ?? "";
  assert.match(row("`exec -i cat`"), /\| 40\.0 MB\/s \| 1,000 MB\/s \| 4% \| \*\*not met\*\*/);
  assert.match(row("`port-forward`"), /\| 400 MB\/s \| 250 MB\/s \| 160% \| met/);
  assert.match(row("`logs -f`"), /\| 50,000 lines\/s \| 200,000 lines\/s \| 25% \|/);
  assert.match(row("`exec -- true`"), /\| 140 ms \/ 400 ms \| 2\.0 ms \/ 3\.0 ms \|/);
  assert.match(row("vkubelet"), /\| vkubelet \| 4\.00 \| 0\.00 \| 0\.00 \| 0\.00 \|/);
  assert.match(row("all of the above"), /\| 9\.50 \| 0\.50 \| 1\.50 \| 0\.50 \|/);
  assert.match(text, /2\.50 2\.00 3\.00 after/);
  assert.match(text, /## Where the time goes\n\nkubectl\.\n$/);
});

Deno.test("streaming flags have bounded defaults and refuse what is out of range", () => {
  const flags = parseStreamingFlags(["--streaming", "--mb", "10", "--repeat=1"]);
  assert.equal(flags.mb, 10);
  assert.equal(flags.repeat, 1);
  assert.equal(flags.runs, 50);
  assert.equal(flags.pods, 1000);
  assert.throws(() => parseStreamingFlags(["--mb", "5000"]), /--mb needs a whole number from 1/);
  assert.throws(() => parseStreamingFlags(["--mb"]), /--mb needs/);
  assert.throws(() => parseStreamingFlags(["--sizes", "1"]), /unknown option --sizes/);
});
