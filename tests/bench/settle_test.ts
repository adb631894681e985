import assert from "node:assert/strict";
import { isSettled, waitSettled, windowRequests } from "../../bench/scenarios/settle.ts";

/** The index of the first sample at which the rule says settled, checking every prefix. */
function settledAt(counts: number[]): number | undefined {
  for (let i = 0; i < counts.length; i++) {
    if (isSettled(counts.slice(0, i + 1))) return i;
  }
  return undefined;
}

Deno.test("an idle kubelet settles at the first whole 10 s window, not before", () => {
  assert.equal(isSettled([]), false);
  assert.equal(isSettled([7]), false);
  assert.equal(isSettled([7, 8]), false);
  assert.equal(windowRequests([7, 8]), undefined);
  assert.equal(settledAt([7, 8, 9, 10]), 2);
  assert.equal(windowRequests([7, 8, 9]), 2);
});

Deno.test("a draining event backlog settles once a 10 s window holds at most 4 requests", () => {
  // 50 events/s for 20 s, then a lease renewal and a node status write.
  const counts = [0, 250, 500, 750, 1000, 1001, 1003, 1004];
  assert.equal(settledAt(counts), 6);
  assert.equal(windowRequests(counts.slice(0, 6)), 251);
  assert.equal(windowRequests(counts.slice(0, 7)), 3);
});

Deno.test("a kubelet that keeps writing never settles", () => {
  // 5 requests every 5 s: 10 in every window, a little above idle.
  const counts = Array.from({ length: 80 }, (_, i) => 5 * i);
  assert.equal(settledAt(counts), undefined);
  // Exactly at the limit counts as idle.
  assert.equal(isSettled([0, 2, 4]), true);
  assert.equal(isSettled([0, 2, 5]), false);
});

Deno.test("a single spike after quiet holds settling back for one window", () => {
  // Quiet for 5 s, a burst of 30, then quiet: the burst must leave the 10 s window first.
  const counts = [0, 1, 31, 32, 33];
  assert.equal(isSettled(counts.slice(0, 3)), false);
  assert.equal(isSettled(counts.slice(0, 4)), false);
  assert.equal(settledAt(counts), 4);
});

/** A clock that advances only when slept on, and a kubelet whose counts follow a script. */
function fakeDeps(counts: number[], cpuPerSample = 0.5) {
  let now = 0;
  let sample = 0;
  const lines: string[] = [];
  return {
    lines,
    deps: {
      requests: () => Promise.resolve(counts[Math.min(sample++, counts.length - 1)]),
      cpuSeconds: () => sample * cpuPerSample,
      now: () => now,
      sleep: (ms: number) => {
        now += ms;
        return Promise.resolve();
      },
      say: (line: string) => lines.push(line),
    },
  };
}

Deno.test("the wait reports time, CPU and requests from its start until settled", async () => {
  const { deps, lines } = fakeDeps([100, 350, 600, 601, 602, 603]);
  const settle = await waitSettled(deps, 60_000);
  assert.deepEqual(settle, { seconds: 20, settled: true, cpuSeconds: 2.5, requests: 502 });
  assert.deepEqual(lines, [
    "settling: kubelet made 500 requests in the last 10 s after 10 s",
    "settling: kubelet made 251 requests in the last 10 s after 15 s",
    "settled after 20 s (2.50 CPU s, 502 requests)",
  ]);
});

Deno.test("the wait gives up at its cap and says so", async () => {
  const { deps, lines } = fakeDeps(Array.from({ length: 100 }, (_, i) => 10 * i));
  const settle = await waitSettled(deps, 30_000);
  assert.equal(settle.settled, false);
  assert.equal(settle.seconds, 30);
  assert.equal(settle.requests, 60);
  assert.equal(lines.at(-1), "did not settle within 30 s (3.50 CPU s, 60 requests)");
});
