/** sstat's answer → per container usage in /stats/summary (no SLURM needed). */
import assert from "node:assert/strict";
import { FakeClock } from "../../../base/fake_clock.ts";
import {
  parseSlurmBytes,
  parseSlurmTime,
  parseSstat,
  slurmStatsSummary,
  SstatSampler,
} from "../../../providers/slurm/stats.ts";

const LINES = (cpu: string) =>
  [
    "7.batch|cpu=00:00:00,energy=0,fs/disk=57753,mem=21240K,pages=0,vmem=438064K",
    `7.0|cpu=${cpu},energy=0,fs/disk=150021761,mem=52132K,pages=0,vmem=53284K`,
    "7.1|cpu=00:00:00,energy=0,fs/disk=6977,mem=1700K,pages=0,vmem=2920K",
    "",
  ].join("\n");

Deno.test("SLURM's elapsed times and memory figures are read in all their forms", () => {
  assert.equal(parseSlurmTime("00:00:08"), 8000);
  assert.equal(parseSlurmTime("1-02:03:04"), ((26 * 60 + 3) * 60 + 4) * 1000);
  assert.equal(parseSlurmTime("03:04.250"), 184_250);
  assert.equal(parseSlurmTime("12.5"), 12_500);
  assert.equal(parseSlurmTime("soon"), undefined);
  assert.equal(parseSlurmBytes("52132K"), 52132 * 1024);
  assert.equal(parseSlurmBytes("1.5M"), 1.5 * 1024 * 1024);
  assert.equal(parseSlurmBytes("512"), 512);
});

Deno.test("sstat lines give each numbered step's CPU time and resident memory", () => {
  const steps = parseSstat(LINES("00:01:30"));
  assert.deepEqual([...steps.keys()], ["7.0", "7.1"], "the batch step is no container");
  assert.deepEqual(steps.get("7.0"), { cpuNs: 90e9, memoryBytes: 52132 * 1024 });
});

Deno.test("one sstat per interval for every request; CPU rate from the last two calls", async () => {
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  const calls: string[][] = [];
  let cpu = "00:00:10";
  const sampler = new SstatSampler({
    clock,
    intervalMs: 10_000,
    run: (command, args) => {
      calls.push([command, ...args]);
      return Promise.resolve(LINES(cpu));
    },
  });
  const [a, b] = await Promise.all([sampler.sample([7, 8]), sampler.sample([7])]);
  assert.equal(calls.length, 1, "concurrent requests share one sstat");
  assert.ok(calls[0].includes("--jobs=7,8"));
  assert.equal(a, b);
  clock.advance(5_000);
  await sampler.sample([7]);
  assert.equal(calls.length, 1, "within the interval the last answer is reused");
  clock.advance(5_000);
  cpu = "00:00:15";
  const second = await sampler.sample([7]);
  assert.equal(calls.length, 2);
  assert.equal(second.rates.get("7.0"), 0.5e9, "5 s of CPU in 10 s is half a core");

  const started = Date.parse("2026-01-01T00:00:00Z") - 20_000;
  const summary = slurmStatsSummary({ name: "vk", startMs: started }, [{
    jobId: 7,
    podRef: { namespace: "ns", name: "p", uid: "u" },
    startTimeMs: started,
    containers: [
      { name: "burn", startedMs: started, step: "7.0" },
      { name: "idle", startedMs: started, step: "7.1" },
      { name: "new", startedMs: started },
    ],
  }], second);
  const [burn, idle, fresh] = summary.pods[0].containers;
  assert.equal(burn.cpu?.usageNanoCores, 0.5e9);
  assert.equal(burn.cpu?.usageCoreNanoSeconds, 15e9);
  assert.equal(burn.memory?.workingSetBytes, 52132 * 1024);
  assert.equal(idle.cpu?.usageNanoCores, 1, "a running container never reports zero");
  assert.equal(fresh.cpu, undefined, "a step whose ID is not known yet has no figures");
  assert.equal(summary.pods[0].memory?.workingSetBytes, (52132 + 1700) * 1024);
  assert.equal(summary.node.cpu?.usageNanoCores, 0.5e9 + 1);
});

Deno.test("CPU rates span 10 s or more, since sstat counts whole seconds", async () => {
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  let cpu = 10;
  const sampler = new SstatSampler({
    clock,
    intervalMs: 1_000,
    run: () => Promise.resolve(LINES(`00:00:${String(cpu).padStart(2, "0")}`)),
  });
  await sampler.sample([7]);
  for (let s = 1; s <= 11; s++) {
    clock.advance(1_000);
    if (s === 6) cpu = 15;
    const sample = await sampler.sample([7]);
    if (s === 11) {
      assert.equal(sample.rates.get("7.0"), 0.5e9, "5 s of CPU over the last 10 s");
    }
  }
});
