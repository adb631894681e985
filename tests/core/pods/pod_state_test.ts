import assert from "node:assert/strict";
import { boundPod, startController } from "./_harness.ts";

Deno.test("deletion: one DELETE per pod, even when the watch shows our writes late", async () => {
  const t = startController();
  for (const name of ["web-0", "web-1", "web-2"]) t.api.pods.put(boundPod(name));
  await t.settle();
  for (const name of ["web-0", "web-1", "web-2"]) {
    t.api.pods.requestDeletion(`shop/${name}`, 30, t.clock.now());
  }
  // The final status write and the DELETE reach the informer only after both were sent, as
  // with a real watch: the sync that the Succeeded status triggers must not delete again.
  t.api.pods.lagging = true;
  await t.settle();
  while (t.api.pods.heldEvents > 0) {
    t.api.pods.catchUp(1);
    await t.settle();
  }
  t.api.pods.lagging = false;
  await t.settle(70_000);
  assert.deepEqual(t.api.pods.deletes.map((d) => d.key).sort(), [
    "shop/web-0",
    "shop/web-1",
    "shop/web-2",
  ]);
  assert.equal(t.api.pods.pods.size, 0);
  await t.stop();
});

for (const push of [true, false]) {
  const how = push ? "pushes" : "is polled";
  Deno.test(`pods created and deleted leave no record and no timer behind (provider ${how})`, async () => {
    const t = startController({ push });
    t.provider.stopImmediately = false;
    const needsConfig = boundPod("cfg-0");
    needsConfig.spec!.containers[0].env = [
      { name: "A", valueFrom: { configMapKeyRef: { name: "absent", key: "a" } } },
    ];
    t.api.pods.put(needsConfig); // CreateContainerConfigError: retried on a backoff timer
    for (const name of ["web-0", "web-1", "web-2", "web-3"]) t.api.pods.put(boundPod(name));
    await t.settle(1_000);
    assert.ok(t.controller.held.records >= 5);
    t.api.pods.requestDeletion("shop/web-0", 30, t.clock.now());
    t.api.pods.requestDeletion("shop/web-1", 30, t.clock.now());
    t.api.pods.requestDeletion("shop/cfg-0", 30, t.clock.now());
    await t.api.pods.delete("shop", "web-2"); // gone without grace
    await t.settle(1_000);
    t.provider.finishStop("shop/web-0"); // stops in time
    await t.settle(40_000); // web-1 is removed when its grace period ends
    t.provider.finishStop("shop/web-1"); // and reports its containers stopped only afterwards
    await t.api.pods.delete("shop", "web-3");
    await t.settle(1_000);
    // Both were stopped in the provider; their last reports come after they were forgotten.
    t.provider.finishStop("shop/web-2");
    t.provider.finishStop("shop/web-3");
    await t.settle(70_000); // a resync
    assert.equal(t.api.pods.pods.size, 0);
    assert.equal(t.provider.pods.size, 0);
    assert.deepEqual(t.controller.held, { records: 0, timers: 0, events: 0 });
    assert.deepEqual(t.api.configMaps.watching, [], "no watch of the pods' ConfigMaps is left");
    await t.stop();
  });
}

Deno.test("a rolling churn of pods leaves the controller holding what it held before", async () => {
  // As a Deployment rolled over and over: every round, N new pods run and the N before them are
  // deleted (Created, Started and Killing events each). What is held must return to what the
  // running pods need, not grow with the pods that went (issue 25).
  const t = startController({ push: true });
  const n = 20;
  let live: string[] = [];
  const heldWithLive: { records: number; timers: number; events: number }[] = [];
  for (let round = 0; round < 5; round++) {
    const next = Array.from({ length: n }, (_, i) => `web-${round}-${i}`);
    for (const name of next) t.api.pods.put(boundPod(name));
    await t.settle(1_000);
    for (const name of live) t.api.pods.requestDeletion(`shop/${name}`, 30, t.clock.now());
    await t.settle(1_000);
    await t.settle(70_000); // a resync: anything left of the deleted pods is swept
    live = next;
    assert.equal(t.api.pods.pods.size, n);
    heldWithLive.push(t.controller.held);
  }
  // N pods run after every round, so the same is held after the fifth as after the first.
  assert.deepEqual(heldWithLive[4], heldWithLive[0]);
  assert.deepEqual(heldWithLive[0], { records: n, timers: 0, events: n });
  for (const name of live) t.api.pods.requestDeletion(`shop/${name}`, 30, t.clock.now());
  await t.settle(1_000);
  await t.settle(70_000);
  assert.equal(t.api.pods.pods.size, 0);
  assert.deepEqual(t.controller.held, { records: 0, timers: 0, events: 0 });
  await t.stop();
});
