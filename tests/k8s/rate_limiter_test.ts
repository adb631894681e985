import assert from "node:assert/strict";
import { RateLimiter } from "../../k8s/rate_limiter.ts";
import { FakeClock, flush } from "../fakes/clock.ts";

Deno.test("a burst goes at once, then requests are released at the configured rate", async () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ qps: 5, burst: 3, clock });
  const released: number[] = [];
  const start = clock.now();
  const all = Array.from(
    { length: 6 },
    (_, i) => limiter.acquire().then(() => released.push(i) && undefined),
  );
  await flush();
  assert.deepEqual(released, [0, 1, 2]);
  await clock.advance(199);
  assert.deepEqual(released, [0, 1, 2], "the fourth waits a full 200 ms");
  await clock.advance(1);
  assert.deepEqual(released, [0, 1, 2, 3]);
  await clock.advance(400);
  await Promise.all(all);
  assert.deepEqual(released, [0, 1, 2, 3, 4, 5], "in arrival order");
  assert.equal(clock.now() - start, 600);
});

Deno.test("tokens saved up during a quiet spell never exceed the burst", async () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ qps: 10, burst: 2, clock });
  await clock.advance(60_000);
  assert.equal(limiter.available, 2);
});

Deno.test("an aborted wait gives its place back", async () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ qps: 1, burst: 1, clock });
  await limiter.acquire();
  const controller = new AbortController();
  const waiting = limiter.acquire({ signal: controller.signal }).catch((e) => e);
  controller.abort(new Error("cancelled"));
  assert.equal((await waiting).message, "cancelled");
  await clock.advance(1000);
  assert.equal(limiter.available, 1, "the cancelled request used no token");
});

Deno.test("qps 0 turns throttling off", async () => {
  const limiter = new RateLimiter({ qps: 0, burst: 0, clock: new FakeClock() });
  for (let i = 0; i < 1000; i++) await limiter.acquire();
  assert.throws(() => new RateLimiter({ qps: 5, burst: 0 }), RangeError);
});

Deno.test("with a batch, a sequential stream is served in rounds at the same rate", async () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ qps: 50, burst: 100, batch: 50, clock });
  const sentAt: number[] = [];
  const start = clock.now();
  const sender = (async () => {
    for (let i = 0; i < 250; i++) {
      await limiter.acquire();
      sentAt.push(clock.now() - start);
    }
  })();
  await flush();
  for (let t = 0; t < 4000; t += 100) await clock.advance(100);
  await sender;
  // The burst of 100 at once, then rounds of 50 a second: 250 requests in 3 s, as without batches.
  assert.equal(sentAt.filter((t) => t === 0).length, 100);
  assert.deepEqual([...new Set(sentAt)], [0, 1000, 2000, 3000]);
  assert.equal(sentAt.filter((t) => t === 1000).length, 50);
  assert.equal(sentAt.at(-1), 3000);
});

Deno.test("a batch never lets more than the burst through, nor holds a waiter past its round", async () => {
  const clock = new FakeClock();
  const limiter = new RateLimiter({ qps: 10, burst: 4, batch: 100, clock });
  assert.equal(limiter.batch, 4, "capped at the burst");
  for (let i = 0; i < 4; i++) await limiter.acquire();
  const released: number[] = [];
  const waiting = Array.from(
    { length: 6 },
    (_, i) => limiter.acquire().then(() => released.push(i) && undefined),
  );
  await clock.advance(399);
  assert.deepEqual(released, []);
  await clock.advance(1);
  assert.deepEqual(released, [0, 1, 2, 3], "the first four wake together after 4 tokens");
  await clock.advance(200);
  await Promise.all(waiting);
  assert.deepEqual(released, [0, 1, 2, 3, 4, 5], "the fifth and sixth at their own time");
});
