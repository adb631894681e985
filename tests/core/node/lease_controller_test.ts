import assert from "node:assert/strict";
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import { FakeClock, flush } from "../../fakes/clock.ts";
import { type CallSlots, LeaseController, NODE_LEASE_NAMESPACE } from "../../../core/node/mod.ts";
import { apiError, FakeNodeApi, recordingLogger } from "./fakes.ts";
import { advanceBy, startNodeSide } from "./_harness.ts";

const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

Deno.test("lease is created with holder, duration, owner and a six-digit MicroTime", async () => {
  const side = await startNodeSide();
  try {
    const lease = side.api.lease!;
    assert.equal(lease.metadata?.namespace, NODE_LEASE_NAMESPACE);
    assert.equal(lease.metadata?.name, "vk-test");
    assert.equal(lease.spec?.holderIdentity, "vk-test");
    assert.equal(lease.spec?.leaseDurationSeconds, 40);
    assert.match(lease.spec!.renewTime!, MICRO_TIME);
    assert.deepEqual(lease.metadata?.ownerReferences, [
      { apiVersion: "v1", kind: "Node", name: "vk-test", uid: side.api.node!.metadata!.uid },
    ]);
  } finally {
    await side.stop();
  }
});

Deno.test("lease is renewed every 10 s plus at most 4 % jitter, well before it expires", async () => {
  const side = await startNodeSide();
  try {
    await advanceBy(side.clock, 120_000, 5_000);
    const times = side.api.calls.filter((c) => /^(createLease|updateLease)$/.test(c.name))
      .map((c) => c.at);
    assert.ok(times.length >= 11, `only ${times.length} renewals in 2 min`);
    for (let i = 1; i < times.length; i++) {
      const gap = times[i] - times[i - 1];
      assert.ok(gap >= 10_000 && gap <= 10_400, `gap ${gap} ms outside 10 s + 4 %`);
    }
    const renewed = Date.parse(side.api.lease!.spec!.renewTime!);
    assert.ok(side.clock.now() - renewed < 40_000 / 3, "the lease was close to expiring");
    // Only updates after the create: no GET while the last written lease is current.
    assert.equal(side.api.count("getLease"), 1);
  } finally {
    await side.stop();
  }
});

Deno.test("renew delay spans exactly the interval to interval + 4 %", () => {
  const make = (random: () => number) =>
    new LeaseController({
      api: new FakeNodeApi(),
      clock: new FakeClock(),
      log: recordingLogger().log,
      nodeName: "n",
      owner: { ready: Promise.resolve(), uid: () => "u" },
      random,
    });
  assert.equal(make(() => 0).nextDelay(), 10_000);
  assert.equal(make(() => 1).nextDelay(), 10_400);
  assert.throws(
    () =>
      new LeaseController({
        api: new FakeNodeApi(),
        clock: new FakeClock(),
        log: recordingLogger().log,
        nodeName: "n",
        owner: { ready: Promise.resolve(), uid: () => "u" },
        renewIntervalMs: 40_000,
      }),
    RangeError,
  );
});

Deno.test("a conflict on renewal backs off, re-reads the lease and renews it", async () => {
  const side = await startNodeSide({ lease: { random: () => 0 } });
  try {
    side.api.touchLease(); // Another writer: our cached resourceVersion is now stale.
    const before = side.api.calls.length;
    await advanceBy(side.clock, 10_000, 10_000);
    await advanceBy(side.clock, 1_000, 50);
    const calls = side.api.calls.slice(before).filter((c) => /Lease$/.test(c.name));
    const names = calls.map((c) => c.name);
    assert.deepEqual(names, ["updateLease", "getLease", "updateLease"]);
    const [conflict, reread] = calls;
    assert.ok(reread.at - conflict.at >= 80, `re-read after ${reread.at - conflict.at} ms`);
    assert.equal(side.api.lease!.spec!.renewTime, side.lease.lease!.spec!.renewTime);
    assert.ok(side.records.some((r) => r.level === "warning" && /renewing lease/.test(r.message)));
  } finally {
    await side.stop();
  }
});

Deno.test("a renewal leaves the managed fields to the apiserver and keeps the rest", async () => {
  const side = await startNodeSide({ lease: { random: () => 0 } });
  try {
    // Another writer labels the lease; the apiserver records who owns which field.
    side.api.lease!.metadata!.labels = { team: "infra" };
    side.api.lease!.metadata!.managedFields = [{
      manager: "kubectl-label",
      operation: "Update",
      apiVersion: "coordination.k8s.io/v1",
      fieldsType: "FieldsV1",
      fieldsV1: { "f:metadata": { "f:labels": { "f:team": {} } } },
    }];
    side.api.touchLease();
    await advanceBy(side.clock, 10_000, 10_000);
    await advanceBy(side.clock, 1_000, 50);
    const updates = side.api.calls.filter((c) => c.name === "updateLease");
    const sent = updates[updates.length - 1].args[0] as Lease;
    // Left unset, the server keeps its own; sent back, 1,000 nodes would send them 100 times a second.
    assert.equal(sent.metadata?.managedFields, undefined);
    assert.deepEqual(sent.metadata?.labels, { team: "infra" });
    assert.equal(sent.metadata?.ownerReferences?.[0].uid, side.node.uid());
    assert.equal(side.api.lease!.spec!.renewTime, side.lease.lease!.spec!.renewTime);
  } finally {
    await side.stop();
  }
});

Deno.test("a lease deleted under us is created again with the node as owner", async () => {
  const side = await startNodeSide({ lease: { random: () => 0 } });
  try {
    side.api.lease = undefined;
    await advanceBy(side.clock, 10_000, 10_000);
    assert.equal(side.api.count("createLease"), 2);
    assert.equal(side.api.lease!.metadata!.ownerReferences![0].uid, side.node.uid());
  } finally {
    await side.stop();
  }
});

Deno.test("lease errors are retried with backoff without stopping the controller", async () => {
  const side = await startNodeSide({ lease: { random: () => 0 } });
  try {
    for (let i = 0; i < 5; i++) {
      side.api.failNext("updateLease", apiError(500, "InternalError", "etcd is sad"));
    }
    await advanceBy(side.clock, 10_000, 10_000);
    // Five failed updates in a row; then, as upstream, it falls back to a GET and an update.
    assert.ok(side.records.some((r) => r.level === "error" && r.properties.n === 5));
    assert.equal(Date.parse(side.api.lease!.spec!.renewTime!), side.clock.now());
    await advanceBy(side.clock, 10_000, 10_000);
    assert.equal(Date.parse(side.api.lease!.spec!.renewTime!), side.clock.now());
  } finally {
    await side.stop();
  }
});

Deno.test("lease waits for the node to exist before it is created", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  let release!: () => void;
  const ready = new Promise<void>((r) => (release = r));
  const lease = new LeaseController({
    api,
    clock,
    log: recordingLogger().log,
    nodeName: "n",
    owner: { ready, uid: () => "uid-9" },
  });
  const controller = new AbortController();
  const running = lease.run(controller.signal);
  await flush();
  assert.equal(api.calls.length, 0);
  release();
  await flush();
  assert.equal(api.count("createLease"), 1);
  await lease.ready;
  controller.abort();
  await running;
});

Deno.test("a lease with a phase renews early once, then every interval from there", async () => {
  const side = await startNodeSide({ lease: { random: () => 0, phase: 0.25 } });
  try {
    await advanceBy(side.clock, 40_000, 500);
    const times = side.api.calls.filter((c) => /^(createLease|updateLease)$/.test(c.name))
      .map((c) => c.at);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    // 7.5 s after the first renewal (a quarter of the 10 s interval earlier), then 10 s each.
    assert.deepEqual(gaps.slice(0, 3), [7_500, 10_000, 10_000]);
  } finally {
    await side.stop();
  }
});

Deno.test("a lease call queued behind other nodes' calls gets its full deadline and goes first", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const { log, records } = recordingLogger();
  let open!: () => void;
  const turn = new Promise<void>((r) => (open = r));
  const asked: (boolean | undefined)[] = [];
  const slots: CallSlots = {
    async run(call, options) {
      asked.push(options.urgent);
      await turn;
      return await call();
    },
  };
  const lease = new LeaseController({
    api,
    clock,
    log,
    nodeName: "n",
    owner: { ready: Promise.resolve(), uid: () => "uid-1" },
    slots,
  });
  const controller = new AbortController();
  const running = lease.run(controller.signal);
  await flush();
  assert.deepEqual(asked, [true]);
  // Queued for longer than the 10 s deadline: the deadline has not started yet.
  await clock.advance(15_000);
  assert.equal(api.calls.length, 0);
  open();
  await lease.ready;
  assert.equal(api.count("createLease"), 1);
  assert.deepEqual(records.filter((r) => r.level !== "info").map((r) => r.message), []);
  assert.ok(asked.length >= 2 && asked.every((urgent) => urgent === true), String(asked));
  controller.abort();
  await running;
});

Deno.test("a renewal that takes seconds does not push the next one back", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const slow = api.updateLease.bind(api);
  // Every renewal's answer takes 3 s (a busy apiserver, a busy process).
  api.updateLease = async (lease: Lease) => {
    await clock.sleep(3_000);
    return await slow(lease);
  };
  const lease = new LeaseController({
    api,
    clock,
    log: recordingLogger().log,
    nodeName: "n",
    owner: { ready: Promise.resolve(), uid: () => "uid-1" },
    random: () => 0,
  });
  const controller = new AbortController();
  const running = lease.run(controller.signal);
  await lease.ready;
  for (let i = 0; i < 40; i++) await clock.advance(1_000);
  // Each update is recorded when its answer comes, 3 s after it was sent.
  const answered = api.calls.filter((c) => c.name === "updateLease").map((c) => c.at);
  assert.ok(answered.length >= 3, `only ${answered.length} renewals in 40 s`);
  // 10 s from one renewal to the next, not 13 s.
  const gaps = answered.slice(1).map((at, i) => at - answered[i]);
  assert.deepEqual(gaps, gaps.map(() => 10_000));
  controller.abort();
  await running;
});
