import assert from "node:assert/strict";
import { TickClock } from "../../base/tick_clock.ts";
import { FakeClock } from "../fakes/clock.ts";

const TICK = 250;
/** A fake time that is a boundary of the tick. */
const START = Date.UTC(2026, 0, 1);

/** Records when each of the given sleeps ended, in the fake clock's time since START. */
function track(clock: TickClock, sleeps: Record<string, Promise<void>>): Map<string, number> {
  const ended = new Map<string, number>();
  for (const [name, sleep] of Object.entries(sleeps)) {
    sleep.then(() => ended.set(name, clock.now() - START));
  }
  return ended;
}

Deno.test("sleeps due within one tick end together on its boundary, on one timer", async () => {
  const fake = new FakeClock(START);
  const clock = new TickClock(fake, TICK);
  await fake.advance(10);
  const ended = track(clock, {
    a: clock.sleep(100), // due at 110: the boundary at 250
    b: clock.sleep(230), // due at 240: 250
    c: clock.sleep(240), // due at 250, on the boundary itself
    d: clock.sleep(250), // due at 260: the next boundary, 500
  });
  assert.equal(fake.pending, 2, "one timer for each boundary, not one for each sleep");
  assert.equal(clock.pendingTicks, 2);
  await fake.advance(239);
  assert.equal(ended.size, 0, "nothing ends before its boundary");
  await fake.advance(1);
  assert.deepEqual(Object.fromEntries(ended), { a: 250, b: 250, c: 250 });
  await fake.advance(250);
  assert.equal(ended.get("d"), 500);
  assert.equal(clock.pendingTicks, 0);
});

Deno.test("a sleep never ends before the time it asked for", async () => {
  const fake = new FakeClock(START);
  const clock = new TickClock(fake, TICK);
  for (
    const [from, ms] of [[0, 0], [1, 0], [0, 1], [249, 1], [250, 250], [7, 9_993], [3, 10_001]]
  ) {
    await fake.advance(from);
    const asked = clock.now() + ms;
    const ended = track(clock, { s: clock.sleep(ms) });
    await fake.advance(ms + TICK);
    const at = ended.get("s");
    assert.ok(at !== undefined, `sleep of ${ms} ms from ${from} ended`);
    assert.ok(START + at >= asked, `sleep of ${ms} ms ended ${asked - START - at} ms early`);
    assert.ok(START + at - asked < TICK, `sleep of ${ms} ms ended a whole tick late`);
    assert.equal((START + at) % TICK, 0, "on a boundary");
  }
});

Deno.test("an aborted sleep rejects with the reason and the others of its tick still end", async () => {
  const fake = new FakeClock(START);
  const clock = new TickClock(fake, TICK);
  const stop = new AbortController();
  const aborted = clock.sleep(100, stop.signal);
  const ended = track(clock, { kept: clock.sleep(120) });
  const reason = new Error("node removed");
  stop.abort(reason);
  await assert.rejects(aborted, (err) => err === reason);
  assert.equal(fake.pending, 1, "the tick's timer stays for the other sleep");
  await fake.advance(TICK);
  assert.equal(ended.get("kept"), TICK);
});

Deno.test("a tick whose sleeps were all aborted clears its timer", async () => {
  const fake = new FakeClock(START);
  const clock = new TickClock(fake, TICK);
  const stops = [new AbortController(), new AbortController()];
  const sleeps = stops.map((s) => clock.sleep(10_000, s.signal).catch((err) => err));
  assert.equal(fake.pending, 1);
  for (const s of stops) s.abort("stopped");
  assert.deepEqual(await Promise.all(sleeps), ["stopped", "stopped"]);
  assert.equal(fake.pending, 0, "no timer left behind for 1,000 stopped deadlines");
  assert.equal(clock.pendingTicks, 0);
  // The same boundary asked for again gets a timer of its own.
  const ended = track(clock, { again: clock.sleep(10_000) });
  await fake.advance(10_000);
  assert.equal(ended.get("again"), 10_000);
});

Deno.test("a sleep with an aborted signal rejects at once and starts no timer", async () => {
  const fake = new FakeClock(START);
  const clock = new TickClock(fake, TICK);
  await assert.rejects(clock.sleep(100, AbortSignal.abort("gone")), (err) => err === "gone");
  assert.equal(fake.pending, 0);
});

Deno.test("a tick of 0 ms is refused with the value named", () => {
  assert.throws(() => new TickClock(new FakeClock(), 0), /tick must be above 0 ms, got 0/);
});
