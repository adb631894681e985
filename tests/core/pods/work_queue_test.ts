import assert from "node:assert/strict";
import { getLogger } from "../../../base/log.ts";
import { type ProcessKey, WorkQueue } from "../../../core/pods/work_queue.ts";
import { FakeClock, flush } from "../../fakes/clock.ts";

const log = getLogger(["vkubelet", "test"]);

function startQueue(
  process: ProcessKey,
  options: Partial<ConstructorParameters<typeof WorkQueue>[0]> = {},
) {
  const clock = new FakeClock();
  const queue = new WorkQueue({ clock, log, process, workers: 2, ...options });
  const abort = new AbortController();
  const done = queue.run(abort.signal);
  return {
    clock,
    queue,
    async stop() {
      abort.abort();
      await done;
    },
  };
}

Deno.test("a key added many times before it runs is processed once", async () => {
  const seen: string[] = [];
  const q = startQueue((key) => {
    seen.push(key);
  });
  q.queue.add("ns/a");
  q.queue.add("ns/a");
  q.queue.add("ns/b");
  q.queue.add("ns/a");
  await flush();
  assert.deepEqual(seen.sort(), ["ns/a", "ns/b"]);
  await q.stop();
});

Deno.test("a key added while it is processed runs again afterwards, never concurrently", async () => {
  let running = 0, maxRunning = 0, runs = 0;
  let release!: () => void;
  const q = startQueue(async () => {
    running++;
    runs++;
    maxRunning = Math.max(maxRunning, running);
    if (runs === 1) await new Promise<void>((r) => release = r);
    running--;
  });
  q.queue.add("ns/a");
  await flush();
  q.queue.add("ns/a");
  q.queue.add("ns/a");
  await flush();
  assert.equal(runs, 1, "not re-run while the first run is in progress");
  release();
  await flush();
  assert.equal(runs, 2, "re-run exactly once after");
  assert.equal(maxRunning, 1);
  await q.stop();
});

Deno.test("workers are bounded", async () => {
  let running = 0, maxRunning = 0;
  const releases: (() => void)[] = [];
  const q = startQueue(async () => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    await new Promise<void>((r) => releases.push(r));
    running--;
  }, { workers: 3 });
  for (let i = 0; i < 10; i++) q.queue.add(`ns/p${i}`);
  await flush();
  assert.equal(maxRunning, 3);
  assert.equal(q.queue.length, 7);
  while (releases.length) {
    releases.shift()!();
    await flush();
  }
  assert.equal(maxRunning, 3);
  assert.equal(q.queue.length, 0);
  await q.stop();
});

Deno.test("workers start again for keys added after the queue went idle", async () => {
  const seen: string[] = [];
  const q = startQueue(async (key) => {
    await Promise.resolve();
    seen.push(key);
  });
  q.queue.add("ns/a");
  await flush();
  assert.deepEqual(seen, ["ns/a"]);
  // Idle now (no worker waits); each later add starts one.
  for (const key of ["ns/b", "ns/c", "ns/d"]) {
    q.queue.add(key);
    await flush();
  }
  assert.deepEqual(seen, ["ns/a", "ns/b", "ns/c", "ns/d"]);
  await q.stop();
});

Deno.test("failures back off exponentially per key, with jitter, and success resets", async () => {
  const attempts: number[] = [];
  let failUntil = 4;
  const q = startQueue(() => {
    attempts.push(q.clock.now());
    if (attempts.length <= failUntil) throw new Error("provider busy");
  }, { baseDelayMs: 1000, maxDelayMs: 60_000 });
  q.queue.add("ns/a");
  await flush();
  for (let i = 0; i < 20; i++) await q.clock.advance(1000);
  assert.equal(attempts.length, 5);
  const gaps = attempts.slice(1).map((t, i) => t - attempts[i]);
  // 1 s, 2 s, 4 s, 8 s, each within ±20% jitter (rounded up to the 1 s steps of advance()).
  for (const [i, gap] of gaps.entries()) {
    const base = 1000 * 2 ** i;
    assert.ok(gap >= base * 0.8 && gap <= base * 1.2 + 1000, `gap ${i} was ${gap}`);
  }
  assert.equal(q.queue.failures("ns/a"), 0, "success forgets the failures");
  failUntil = 6;
  q.queue.add("ns/a");
  await flush();
  const before = attempts.length;
  await q.clock.advance(1300);
  assert.equal(attempts.length, before + 1, "the next failure starts from the base delay again");
  await q.stop();
});

Deno.test("backoff is capped, so a failing key keeps being retried", async () => {
  let attempts = 0;
  const q = startQueue(() => {
    attempts++;
    throw new Error("always");
  }, { baseDelayMs: 1000, maxDelayMs: 10_000 });
  q.queue.add("ns/a");
  await flush();
  for (let i = 0; i < 120; i++) await q.clock.advance(1000);
  // 1+2+4+8 s, then every ~10 s: well over 10 attempts in 120 s.
  assert.ok(attempts >= 12, `only ${attempts} attempts`);
  await q.stop();
});

Deno.test("retries share a global rate limit", async () => {
  const attempts = new Map<string, number>();
  const q = startQueue((key) => {
    attempts.set(key, (attempts.get(key) ?? 0) + 1);
    throw new Error("fail");
  }, { baseDelayMs: 1, maxDelayMs: 1, qps: 1, burst: 5, workers: 10 });
  for (let i = 0; i < 20; i++) q.queue.add(`ns/p${i}`);
  await flush();
  await q.clock.advance(10_000);
  const total = [...attempts.values()].reduce((a, b) => a + b, 0);
  // 20 first attempts are not throttled; retries: burst 5 + 1 per second for 10 s.
  assert.ok(total <= 20 + 5 + 11, `retries were not limited: ${total}`);
  assert.ok(total >= 20 + 5 + 8, `retries were starved: ${total}`);
  await q.stop();
});

Deno.test("a retry waits at least what the error asks for", async () => {
  let attempts = 0;
  const q = startQueue(() => {
    attempts++;
    if (attempts === 1) throw Object.assign(new Error("later"), { retryAfterMs: 30_000 });
  }, {
    baseDelayMs: 10,
    retryAfter: (err) => (err as { retryAfterMs?: number }).retryAfterMs ?? 0,
  });
  q.queue.add("ns/a");
  await flush();
  await q.clock.advance(29_000);
  assert.equal(attempts, 1);
  await q.clock.advance(1_000);
  assert.equal(attempts, 2);
  await q.stop();
});

Deno.test("a key can ask to be processed again later", async () => {
  const times: number[] = [];
  const q = startQueue(() => {
    times.push(q.clock.now());
    return times.length === 1 ? { requeueAfterMs: 30_000 } : undefined;
  });
  q.queue.add("ns/a");
  await flush();
  await q.clock.advance(29_999);
  assert.equal(times.length, 1);
  await q.clock.advance(1);
  assert.equal(times.length, 2);
  assert.equal(times[1] - times[0], 30_000);
  await q.stop();
});

Deno.test("an immediate add overrides a pending delay", async () => {
  let runs = 0;
  const q = startQueue(() => {
    runs++;
  });
  q.queue.addAfter("ns/a", 60_000);
  await flush();
  assert.equal(runs, 0);
  q.queue.add("ns/a");
  await flush();
  assert.equal(runs, 1);
  await q.clock.advance(60_000);
  assert.equal(runs, 1, "the delayed add was dropped");
  await q.stop();
});

Deno.test("run resolves after abort only once the key in progress has finished", async () => {
  let release!: () => void;
  let finished = false;
  const q = startQueue(async () => {
    await new Promise<void>((r) => release = r);
    finished = true;
  });
  q.queue.add("ns/a");
  await flush();
  let stopped = false;
  const stopping = q.stop().then(() => stopped = true);
  await flush();
  assert.equal(stopped, false);
  release();
  await stopping;
  assert.equal(finished, true);
});

Deno.test("drained resolves once every queued key and the one in progress are done", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const done: string[] = [];
  const q = startQueue(async (key) => {
    if (key === "ns/slow") await gate;
    done.push(key);
  });
  await q.queue.drained(); // nothing queued: at once
  q.queue.add("ns/a");
  q.queue.add("ns/slow");
  q.queue.add("ns/b");
  let drained = false;
  q.queue.drained().then(() => drained = true);
  await flush();
  assert.deepEqual(done.sort(), ["ns/a", "ns/b"]);
  assert.equal(drained, false, "ns/slow is still in progress");
  release();
  await flush();
  assert.equal(drained, true);
  assert.deepEqual(done.sort(), ["ns/a", "ns/b", "ns/slow"]);
  await q.stop();
});

Deno.test("keys that never wait on I/O still let timers and sockets run between them", async () => {
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) { /* work without a wait, like an in-memory provider */ }
  };
  const q = startQueue(() => busy(0.1), { workers: 10 });
  for (let i = 0; i < 2000; i++) q.queue.add(`ns/p${i}`);
  // Queued behind 2,000 keys of 0.1 ms each: a timer due at once, as a lease renewal or a
  // socket read would be.
  let leftWhenTimerRan = -1;
  setTimeout(() => leftWhenTimerRan = q.queue.length, 0);
  await q.queue.drained();
  assert.ok(leftWhenTimerRan > 0, `the timer ran with ${leftWhenTimerRan} keys left`);
  await q.stop();
});

Deno.test("an idle queue holds no timer; a delayed key holds one until it runs", async () => {
  const seen: string[] = [];
  const q = startQueue((key) => {
    seen.push(key);
  });
  q.queue.add("ns/now");
  await flush();
  assert.deepEqual(seen, ["ns/now"]);
  assert.equal(
    q.clock.pending,
    0,
    "nothing delayed: no timer (a process of 1,000 nodes has 2,000 queues)",
  );
  q.queue.addAfter("ns/later", 5_000);
  await flush();
  assert.equal(q.clock.pending, 1, "one timer for the delayed key");
  await q.clock.advance(4_999);
  assert.deepEqual(seen, ["ns/now"]);
  await q.clock.advance(1);
  assert.deepEqual(seen, ["ns/now", "ns/later"]);
  assert.equal(q.clock.pending, 0, "idle again: no timer");
  q.queue.addAfter("ns/dropped", 5_000);
  await flush();
  q.queue.drop("ns/dropped");
  await flush();
  assert.equal(q.clock.pending, 0, "the dropped key's timer is gone");
  await q.stop();
});
