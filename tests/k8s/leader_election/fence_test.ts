/**
 * The fence against slow calls, hung renewals and steps of the wall clock (issue 41, items 6-8):
 * whatever happens, two replicas never both have their fence open.
 * @module
 */
import assert from "node:assert/strict";
import { FakeClock, flush } from "../../fakes/clock.ts";
import { LeadershipFence } from "../../../k8s/leader_election/mod.ts";
import { MemoryLeases, replica, stopAll, twoWriters } from "./_fakes.ts";

Deno.test("a standby whose GET is slow counts the lease from when the GET returned: never two writers", async () => {
  const clock = new FakeClock();
  const leases = new MemoryLeases();
  const a = replica(clock, leases, "a");
  await flush();
  await clock.advance(100);
  // b's first GET takes 5.5 s; it returns the record `a` wrote at 5 s, a's last renewal.
  const b = replica(clock, leases, "b", { link: { getDelayMs: 5_500 } });
  await clock.advance(5_400);
  a.link.down = true;
  await clock.advance(200);
  b.link.getDelayMs = 0;
  assert.equal(await twoWriters(clock, a, b, 12_000), undefined, "two writers");
  assert.equal(leases.holder, "b", "b took the lease once it had expired");
  assert.ok(b.elector.isLeader && !a.elector.isLeader);
  await stopAll(clock, a, b);
});

Deno.test("a leader whose renewal hangs stops at its fence's deadline, not when the renewal answers", async () => {
  const clock = new FakeClock();
  const leases = new MemoryLeases();
  const abortedAt: number[] = [];
  const a = replica(clock, leases, "a", { link: { abortedAt } });
  await flush();
  await clock.advance(3_500); // renewed at 1, 2 and 3 s: the fence is open until 9 s
  assert.ok(a.fence.open);
  // The renewal at 4 s waits 20 s for its answer.
  a.link.getDelayMs = 20_000;
  abortedAt.length = 0;
  await clock.advance(5_400); // 8.9 s
  assert.equal(a.termEnded, 0, "still leading before the deadline");
  await clock.advance(200); // 9.1 s
  assert.ok(!a.fence.open);
  assert.equal(a.termEnded, 1, "the term ended at the fence's deadline");
  assert.ok(!a.elector.isLeader);
  assert.deepEqual(abortedAt, [9_000], "the renewal was given up when the fence closed");
  a.link.getDelayMs = 0;
  a.link.down = true; // so that it does not simply lead again
  await clock.advance(16_000); // the late answer arrives and opens nothing
  assert.ok(!a.fence.open && !a.elector.isLeader);
  await stopAll(clock, a);
});

Deno.test("a write needs both the wall and the monotonic clock to say the fence is open", async () => {
  const clock = new FakeClock();
  const fence = new LeadershipFence(clock);
  fence.extend(fence.mark(), 6_000);
  assert.ok(fence.open);
  // The wall clock steps back 30 s: the monotonic clock still closes the fence on time.
  clock.stepWall(-30_000);
  await clock.advance(5_900);
  assert.ok(fence.open);
  await clock.advance(200);
  assert.ok(!fence.open, "closed 6 s after the renewal, whatever the wall clock says");
  // The wall clock jumps 30 s ahead (or the host was suspended): closed at once.
  fence.extend(fence.mark(), 6_000);
  assert.ok(fence.open);
  clock.stepWall(30_000);
  assert.ok(!fence.open, "closed by the wall clock");
  assert.throws(() => fence.check("PATCH node"), /refused/);
});

Deno.test("wall clock steps of ±30 s on the leader or the standby never make two writers", async (t) => {
  for (const who of ["leader", "standby"] as const) {
    for (const stepMs of [30_000, -30_000]) {
      await t.step(`${who} ${stepMs > 0 ? "+" : "-"}30 s`, async () => {
        const clock = new FakeClock();
        const leases = new MemoryLeases();
        const a = replica(clock, leases, "a");
        await flush();
        const b = replica(clock, leases, "b");
        await clock.advance(3_000);
        assert.ok(a.elector.isLeader && !b.elector.isLeader);
        const stepped = who === "leader" ? a : b;
        // While a is reachable, nobody takes its lease.
        stepped.clock.stepWall(stepMs);
        assert.equal(await twoWriters(clock, a, b, 10_000), undefined, "two writers");
        assert.equal(leases.holder, "a", "a keeps (or takes back) its lease");
        assert.ok(a.elector.isLeader && a.fence.open, "a leads");
        // Cut off, a stops writing before b starts, though a clock steps meanwhile.
        a.link.down = true;
        await clock.advance(500);
        stepped.clock.stepWall(stepMs);
        assert.equal(await twoWriters(clock, a, b, 20_000), undefined, "two writers");
        assert.equal(leases.holder, "b");
        assert.ok(b.fence.open && !a.fence.open);
        await stopAll(clock, a, b);
      });
    }
  }
});
