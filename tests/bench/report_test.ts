import assert from "node:assert/strict";
import { ratio } from "../../bench/tools/report.ts";
import { groupThousands, stoppedEarly } from "../../bench/tools/chart.ts";
import type { RunResult } from "../../bench/scenarios/scenarios.ts";

Deno.test("no ratio is given against a value the table shows as 0.00", () => {
  // 0.0042 CPU s shows as "0.00": "1911.00×" would only measure the rounding.
  assert.equal(ratio(8.03, 0.0042), "–");
  assert.equal(ratio(8.03, 0.0042, "0.00"), "–");
  assert.equal(ratio(8.03, 0.4, "0"), "–");
  assert.equal(ratio(3, 2), "1.50×");
  assert.equal(ratio(1, 0.01, "0.01"), "100.00×");
  assert.equal(ratio(1, NaN), "–");
  assert.equal(ratio(1, 0), "–");
  // A cell that is not a number (a timeout, "not run") does not hide a known ratio.
  assert.equal(ratio(2, 4, "> 120 (90/100)"), "0.50×");
});

Deno.test("the chart groups thousands with a space, never a comma that reads as decimal", () => {
  assert.equal(groupThousands(100), "100");
  assert.equal(groupThousands(1000), "1 000");
  assert.equal(groupThousands(10000), "10 000");
  assert.equal(groupThousands(1234567), "1 234 567");
  assert.doesNotMatch(groupThousands(10000), /[,.]/);
});

function run(n: number, curve: [number, number][], seconds: number): RunResult {
  return {
    subject: "peer",
    n,
    create: { seconds, done: curve.at(-1)?.[1] ?? 0, curve },
  } as unknown as RunResult;
}

Deno.test("a subject whose pods did not all run is marked where the bench stopped waiting", () => {
  assert.equal(stoppedEarly(run(100, [[1, 50], [2, 100]], 2)), undefined);
  assert.deepEqual(stoppedEarly(run(100, [[1, 50], [2, 70]], 360)), { t: 360, done: 70 });
  assert.deepEqual(stoppedEarly(run(100, [], NaN)), { t: 0, done: 0 });
});
