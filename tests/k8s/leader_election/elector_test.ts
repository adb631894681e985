/**
 * The leader elector and its fence with a fake clock and an in-memory Lease store that has the
 * apiserver's optimistic concurrency (`./_fakes.ts`).
 * @module
 */
import assert from "node:assert/strict";
import { FakeClock, flush } from "../../fakes/clock.ts";
import { isNotLeader, LeadershipFence } from "../../../k8s/leader_election/mod.ts";
import { fenceProvider } from "../../../app/fenced_provider.ts";
import type { Provider } from "../../../provider/mod.ts";
import { MemoryLeases, replica, stopAll } from "./_fakes.ts";

Deno.test("one of two replicas leads; the other takes over once the lease expires", async () => {
  const clock = new FakeClock();
  const leases = new MemoryLeases();
  const a = replica(clock, leases, "a");
  await flush();
  const b = replica(clock, leases, "b");
  await clock.advance(3_000);
  assert.equal(leases.holder, "a");
  assert.ok(a.elector.isLeader && a.fence.open);
  assert.ok(!b.elector.isLeader && !b.fence.open);

  // a is cut off: it stops writing within the renew deadline, b takes over after the lease.
  a.link.down = true;
  const cutAt = clock.now();
  let fencedAt = 0;
  let takenAt = 0;
  for (let ms = 0; ms < 12_000; ms += 250) {
    await clock.advance(250);
    if (!fencedAt && !a.fence.open) fencedAt = clock.now() - cutAt;
    if (!takenAt && b.elector.isLeader) takenAt = clock.now() - cutAt;
  }
  assert.ok(fencedAt > 0 && fencedAt <= 6_000, `a stopped writing after ${fencedAt} ms`);
  assert.ok(takenAt >= 7_000 && takenAt <= 10_000, `b took over after ${takenAt} ms`);
  assert.ok(fencedAt < takenAt, "the old leader stops before the new one starts");
  assert.equal(leases.holder, "b");
  assert.equal(leases.lease?.spec?.leaseTransitions, 1);
  assert.equal(a.termEnded, 1);
  assert.ok(!a.elector.isLeader);

  // a is reachable again: it stays a standby.
  a.link.down = false;
  await clock.advance(5_000);
  assert.ok(!a.elector.isLeader && b.elector.isLeader);
  await stopAll(clock, a, b);
});

Deno.test("a leader that stops releases the lease and the standby takes it at its next try", async () => {
  const clock = new FakeClock();
  const leases = new MemoryLeases();
  const a = replica(clock, leases, "a");
  await flush();
  const b = replica(clock, leases, "b");
  await clock.advance(2_000);
  assert.equal(leases.holder, "a");
  a.stop.abort();
  await a.done;
  assert.equal(leases.holder, "", "released");
  assert.equal(leases.lease?.spec?.leaseDurationSeconds, 1);
  assert.equal(a.termEnded, 1);
  await clock.advance(1_300); // one jittered retry period
  assert.equal(leases.holder, "b");
  assert.ok(b.elector.isLeader);
  await stopAll(clock, b);
});

Deno.test("a leader paused past its lease writes nothing when it resumes and stands by", async () => {
  const clock = new FakeClock();
  const leases = new MemoryLeases();
  const a = replica(clock, leases, "a");
  await flush();
  await clock.advance(1_000);
  assert.ok(a.fence.open);
  // Another replica takes the expired lease while `a` is paused (its timers have not run).
  leases.lease = {
    ...leases.lease!,
    metadata: { ...leases.lease!.metadata, resourceVersion: "99" },
    spec: { ...leases.lease!.spec, holderIdentity: "b" },
  };
  // The pause: both clocks move on by 20 s in one step, as a SIGCONT'd process sees them.
  const writes = leases.writes.length;
  clock.jump(20_000);
  assert.ok(!a.fence.open, "the fence is closed before any timer runs");
  assert.throws(() => a.fence.check("PATCH node"), isNotLeader);
  // Less than b's lease duration: b (not modelled here) would have renewed meanwhile.
  await clock.advance(5_000);
  assert.equal(leases.writes.length, writes, "no lease write after resuming");
  assert.ok(!a.elector.isLeader);
  assert.equal(a.termEnded, 1);
  assert.equal(leases.holder, "b");
  await stopAll(clock, a);
});

Deno.test("the fenced provider refuses create, update and delete without the lease", async () => {
  const clock = new FakeClock();
  const fence = new LeadershipFence(clock);
  const calls: string[] = [];
  const provider = {
    highAvailability: true,
    createPod: () => Promise.resolve(void calls.push("create")),
    updatePod: () => Promise.resolve(void calls.push("update")),
    deletePod: () => Promise.resolve(void calls.push("delete")),
    getPod: () => Promise.resolve(undefined),
    listPods: () => Promise.resolve([]),
  } satisfies Provider;
  const fenced = fenceProvider(provider, fence);
  await assert.rejects(fenced.createPod({}, {}), isNotLeader);
  await assert.rejects(fenced.deletePod({}, {}), isNotLeader);
  assert.deepEqual(await fenced.listPods({}), [], "reads pass");
  assert.equal(fenced.highAvailability, true);
  fence.extend(fence.mark(), 6_000);
  await fenced.createPod({}, {});
  await fenced.updatePod({}, {});
  assert.deepEqual(calls, ["create", "update"]);
  fence.guardRequest({ method: "PATCH", path: "/api/v1/nodes/n/status" });
  await clock.advance(6_000);
  fence.guardRequest({ method: "GET", path: "/api/v1/pods" });
  assert.throws(
    () => fence.guardRequest({ method: "PATCH", path: "/api/v1/nodes/n/status" }),
    isNotLeader,
    "writes stop at the renew deadline",
  );
});

Deno.test("a leader whose work fails gives the lease up, stops renewing and lets the other lead", async () => {
  const clock = new FakeClock();
  const leases = new MemoryLeases();
  const a = replica(clock, leases, "a", {
    work: () => Promise.reject(new Error("kubelet API port in use")),
  });
  await flush();
  const b = replica(clock, leases, "b");
  await clock.advance(2_500);
  assert.ok(!a.elector.isLeader && !a.fence.open, "a gave up");
  assert.equal(leases.holder, "b", "b leads after a released the lease");
  const writesByA = leases.writes.filter((w) => w === "a").length;
  await clock.advance(5_000);
  assert.equal(leases.writes.filter((w) => w === "a").length, writesByA, "a renews no more");
  assert.ok(b.elector.isLeader);
  await stopAll(clock, a, b);
});
