import assert from "node:assert/strict";
import { InvalidInputError, TransientError } from "../../../provider/mod.ts";
import { recordingLogger } from "../node/fakes.ts";
import { boundPod, startController } from "./_harness.ts";

Deno.test("a pod bound to the node runs in the provider and its status is written back", async () => {
  const t = startController();
  const pod = t.api.pods.put(boundPod("web-0"));
  await t.controller.ready;
  await t.settle();
  assert.deepEqual(t.provider.ops("create"), ["shop/web-0"]);
  const written = t.api.pods.pods.get("shop/web-0")!;
  assert.equal(written.status?.phase, "Running");
  assert.equal(written.status?.podIP, "10.1.0.10");
  assert.equal(written.status?.hostIP, "192.168.1.2", "hostIP defaults to the node's IP");
  assert.equal(written.status?.qosClass, "BestEffort", "qosClass is the apiserver's");
  assert.ok(
    written.status?.conditions?.some((c) => c.type === "PodScheduled"),
    "the scheduler's condition is kept",
  );
  assert.deepEqual(t.api.events.withReason("Started").map((e) => e.involvedObject.uid), [
    pod.metadata!.uid,
  ]);
  assert.equal(t.api.events.withReason("Created").length, 1);
  await t.stop();
});

Deno.test("status writes are skipped when nothing changed", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  const writes = t.api.pods.statusWrites.length;
  assert.equal(writes, 1);
  await t.settle(61_000 * 3); // three resyncs
  t.provider.setStatus("shop/web-0", (s) => s); // a report that changes nothing
  await t.settle();
  assert.equal(t.api.pods.statusWrites.length, writes);
  await t.stop();
});

Deno.test("a status another writer changed is written again", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  const current = t.api.pods.pods.get("shop/web-0")!;
  t.api.pods.put({ ...current, status: { ...current.status, phase: "Pending", podIP: "6.6.6.6" } });
  await t.settle();
  const restored = t.api.pods.pods.get("shop/web-0")!;
  assert.equal(restored.status?.phase, "Running");
  assert.equal(restored.status?.podIP, "10.1.0.10");
  assert.equal(t.api.pods.statusWrites.length, 2);
  await t.stop();
});

Deno.test("a status write that conflicts is retried with the fresh resourceVersion", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  t.api.pods.conflictsToInject = 2;
  t.provider.setStatus("shop/web-0", (s) => ({ ...s, phase: "Running", message: "warm" }));
  await t.settle();
  assert.equal(t.api.pods.pods.get("shop/web-0")!.status?.message, "warm");
  await t.stop();
});

Deno.test("deletion: the provider is told at once; the object goes with grace 0 and a uid precondition once containers stop", async () => {
  const t = startController();
  t.provider.stopImmediately = false;
  const pod = t.api.pods.put(boundPod("web-0"));
  await t.settle();
  t.api.pods.requestDeletion("shop/web-0", 30, t.clock.now());
  await t.settle();
  assert.deepEqual(t.provider.ops("delete"), ["shop/web-0"], "told at once");
  assert.ok(t.api.pods.pods.has("shop/web-0"), "kept while containers run");
  assert.equal(t.api.events.withReason("Killing")[0]?.message, "Stopping container main");
  await t.settle(3_000);
  t.provider.finishStop("shop/web-0");
  await t.settle();
  assert.equal(t.api.pods.pods.has("shop/web-0"), false);
  const [del] = t.api.pods.deletes;
  assert.deepEqual(del.options.preconditions, { uid: pod.metadata!.uid });
  assert.equal(del.options.gracePeriodSeconds, 0);
  assert.ok(t.clock.now() - Date.UTC(2026, 0, 1) < 30_000, "well before the grace period ended");
  await t.stop();
});

Deno.test("deletion: a pod whose containers do not stop is removed when its grace period ends", async () => {
  const t = startController();
  t.provider.stopImmediately = false;
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  t.api.pods.requestDeletion("shop/web-0", 30, t.clock.now());
  await t.settle(29_000);
  assert.ok(t.api.pods.pods.has("shop/web-0"), "the grace period is honoured");
  await t.settle(2_000);
  assert.equal(t.api.pods.pods.has("shop/web-0"), false, "never left Terminating");
  await t.stop();
});

Deno.test("deletion: a pod that never started is removed at once", async () => {
  const t = startController();
  t.provider.createError = () => new TransientError("backend down");
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  t.api.pods.requestDeletion("shop/web-0", 30, t.clock.now());
  await t.settle();
  assert.equal(t.api.pods.pods.has("shop/web-0"), false);
  await t.stop();
});

Deno.test("a pod deleted from the API without grace is stopped in the provider", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  await t.api.pods.delete("shop", "web-0");
  await t.settle();
  assert.deepEqual(t.provider.ops("delete"), ["shop/web-0"]);
  assert.equal(t.provider.pods.size, 0);
  await t.stop();
});

Deno.test("restart: nothing is deleted before the informer has synced, then only true orphans", async () => {
  const t = startController({ syncOnRun: false });
  const a = t.api.pods.put(boundPod("a"));
  const b = t.api.pods.put(boundPod("b"));
  t.provider.preload(a);
  t.provider.preload(b);
  t.provider.preload(boundPod("orphan"));
  t.provider.preload({ ...b, metadata: { ...b.metadata, name: "b-old-uid", uid: "stale" } });
  await t.settle(600_000); // a very slow start: ten minutes without a synced cache
  assert.deepEqual(t.provider.ops("delete"), []);
  assert.deepEqual(t.provider.ops("create"), []);
  t.api.pods.informerInstance.sync();
  await t.controller.ready;
  await t.settle();
  assert.deepEqual(t.provider.ops("delete").sort(), ["shop/b-old-uid", "shop/orphan"]);
  assert.deepEqual(t.provider.ops("create"), [], "running pods are not created twice");
  assert.deepEqual([...t.provider.pods.keys()].sort(), ["shop/a", "shop/b"]);
  await t.stop();
});

Deno.test("start-up says when every pod listed at start has been handled, and how many", async () => {
  const { log, records } = recordingLogger();
  const t = startController({ syncOnRun: false, deps: { log } });
  for (const name of ["a", "b", "c"]) t.api.pods.put(boundPod(name));
  t.api.pods.informerInstance.sync();
  await t.controller.ready;
  const line = () => records.find((r) => r.message.startsWith("start-up synced"));
  assert.equal(line(), undefined, "not before the workers ran");
  await t.settle();
  assert.deepEqual(t.provider.ops("create").sort(), ["shop/a", "shop/b", "shop/c"]);
  assert.equal(line()?.properties.count, 3);
  assert.equal(line()?.properties.retrying, 0);
  await t.stop();
});

Deno.test("restart: pods the API has but the provider does not are created", async () => {
  const t = startController();
  t.api.pods.put(boundPod("a"));
  t.api.pods.put(boundPod("b"));
  t.provider.preload(t.api.pods.pods.get("shop/a")!);
  await t.settle();
  assert.deepEqual(t.provider.ops("create"), ["shop/b"]);
  await t.stop();
});

Deno.test("Succeeded and Failed pods are left alone", async () => {
  const t = startController();
  const done = boundPod("done");
  t.api.pods.put({ ...done, status: { phase: "Succeeded" } });
  const failed = t.api.pods.put({ ...boundPod("failed"), status: { phase: "Failed" } });
  t.provider.preload(failed);
  await t.settle(61_000);
  assert.deepEqual(t.provider.ops("create"), []);
  assert.deepEqual(t.provider.ops("delete"), []);
  assert.equal(t.api.pods.statusWrites.length, 0);
  await t.stop();
});

Deno.test("a transient provider error is reported and retried with backoff until the pod runs", async () => {
  const t = startController();
  let failures = 3;
  t.provider.createError = () => failures-- > 0 ? new TransientError("quota exceeded") : undefined;
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  assert.equal(t.api.events.withReason("ProviderCreateFailed")[0]?.message, "quota exceeded");
  const pending = t.api.pods.pods.get("shop/web-0")!;
  assert.equal(pending.status?.phase, "Pending");
  assert.equal(pending.status?.reason, "ProviderFailed");
  await t.settle(100);
  assert.equal(t.provider.ops("create").length, 1, "backoff: no immediate retry");
  for (let i = 0; i < 10; i++) await t.settle(1_000);
  assert.equal(t.provider.ops("create").length, 4);
  assert.equal(t.api.pods.pods.get("shop/web-0")!.status?.phase, "Running");
  await t.stop();
});

Deno.test("a permanent provider error fails the pod with a reason and message, without retries", async () => {
  const t = startController();
  t.provider.createError = () => new InvalidInputError("GPUs are not available here");
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  const failed = t.api.pods.pods.get("shop/web-0")!;
  assert.equal(failed.status?.phase, "Failed");
  assert.equal(failed.status?.reason, "ProviderFailed");
  assert.equal(failed.status?.message, "GPUs are not available here");
  await t.settle(600_000);
  assert.equal(t.provider.ops("create").length, 1);
  await t.stop();
});

Deno.test("a missing mandatory ConfigMap is reported as the kubelet does, and the pod starts once it exists", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0", {
    containers: [{
      name: "main",
      env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "cfg", key: "a" } } }],
    }],
  }));
  await t.settle();
  const [event] = t.api.events.withReason("Failed");
  assert.equal(event.message, 'Error: configmap "cfg" not found');
  assert.equal(event.involvedObject.fieldPath, "spec.containers{main}");
  const waiting = t.api.pods.pods.get("shop/web-0")!.status?.containerStatuses?.[0].state?.waiting;
  assert.equal(waiting?.reason, "CreateContainerConfigError");
  assert.equal(t.provider.ops("create").length, 0);
  t.api.configMaps.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "1" } });
  await t.settle();
  assert.deepEqual(t.provider.ops("create"), ["shop/web-0"]);
  assert.deepEqual(t.provider.pods.get("shop/web-0")!.spec!.containers[0].env, [{
    name: "A",
    value: "1",
  }]);
  await t.stop();
});

Deno.test("a pod controller that stops (a term that ends) leaves no status callback in the provider", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  assert.equal(t.provider.subscribers, 1);
  await t.stop();
  assert.equal(t.provider.subscribers, 0, "unsubscribed");
});

Deno.test("a provider without notifyPods is polled for status", async () => {
  const t = startController({ push: false, deps: { statusPollIntervalMs: 5_000 } });
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  assert.equal(t.api.pods.pods.get("shop/web-0")!.status?.phase, "Running");
  t.provider.setStatus("shop/web-0", (s) => ({ ...s, message: "polled" }));
  await t.settle(5_000);
  assert.equal(t.api.pods.pods.get("shop/web-0")!.status?.message, "polled");
  await t.stop();
});

Deno.test("DaemonSet pods are not run by default, and never loop between create and fail", async () => {
  const owner = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    name: "agent",
    uid: "ds",
    controller: true,
  };
  const skip = startController();
  skip.api.pods.put(boundPod("agent-x", {}, { ownerReferences: [owner] }));
  await skip.settle(61_000);
  assert.deepEqual(skip.provider.ops("create"), []);
  assert.equal(skip.api.pods.pods.get("shop/agent-x")!.status?.phase, "Pending");
  assert.equal(skip.api.events.withReason("DaemonSetPodSkipped").length, 1);
  await skip.stop();

  const run = startController({ deps: { daemonSetPods: "run" } });
  run.provider.createError = () => new InvalidInputError("no host network here");
  run.api.pods.put(boundPod("agent-y", {}, { ownerReferences: [owner] }));
  await run.settle();
  assert.equal(
    run.api.pods.pods.get("shop/agent-y")!.status?.phase,
    "Pending",
    "not Failed: no replace loop",
  );
  await run.settle(10_000);
  assert.ok(run.provider.ops("create").length <= 8, "retried with backoff, not hot");
  await run.stop();
});

Deno.test("env referring to the pod IP is resolved with the IP the provider assigned", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0", {
    containers: [{
      name: "main",
      env: [{ name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
    }],
  }));
  await t.settle();
  assert.deepEqual(t.provider.pods.get("shop/web-0")!.spec!.containers[0].env, [{
    name: "IP",
    value: "10.1.0.10",
  }]);
  await t.stop();
});

/** Counts status write attempts and reads of pods, successful or not. */
function countCalls(t: ReturnType<typeof startController>) {
  const calls = { updateStatus: 0, get: 0 };
  const update = t.api.pods.updateStatus.bind(t.api.pods);
  const get = t.api.pods.get.bind(t.api.pods);
  t.api.pods.updateStatus = (pod) => (calls.updateStatus++, update(pod));
  t.api.pods.get = (namespace, name) => (calls.get++, get(namespace, name));
  return calls;
}

Deno.test("a status just written is not written again while the watch lags behind", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  t.api.pods.deliver = false;
  const calls = countCalls(t);
  t.provider.setStatus("shop/web-0", (s) => ({ ...s, message: "warm" }));
  await t.settle();
  assert.equal(calls.updateStatus, 1);
  await t.settle(61_000 * 2); // two resyncs, the informer still holds the old copy
  assert.deepEqual(calls, { updateStatus: 1, get: 0 }, "no stale write, no conflict, no read");
  assert.equal(t.api.pods.pods.get("shop/web-0")!.status?.message, "warm");
  await t.stop();
});

Deno.test("deletion: the final status is written once, without a conflict", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  const calls = countCalls(t);
  t.api.pods.requestDeletion("shop/web-0", 30, t.clock.now());
  await t.settle();
  assert.equal(t.api.pods.pods.has("shop/web-0"), false);
  assert.deepEqual(calls, { updateStatus: 1, get: 0 });
  assert.equal(
    t.api.pods.statusWrites.at(-1)?.status?.containerStatuses?.[0].state?.terminated !== undefined,
    true,
  );
  await t.stop();
});

Deno.test("a resync leaves alone the pods the provider still runs unchanged", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  let gets = 0;
  const getPod = t.provider.getPod.bind(t.provider);
  t.provider.getPod = (namespace, name) => (gets++, getPod(namespace, name));
  const lists = t.provider.ops("list").length;
  await t.settle(70_000);
  await t.settle(70_000);
  assert.ok(t.provider.ops("list").length >= lists + 2, "the provider is listed at each resync");
  assert.equal(gets, 0, "no per-pod call for an unchanged pod");
  assert.deepEqual(t.provider.ops("create"), ["shop/web-0"]);
  await t.stop();
});

Deno.test("a pod the provider lost is created again at the next resync", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  t.provider.pods.delete("shop/web-0"); // gone without a word
  await t.settle(61_000 * 2);
  assert.deepEqual(t.provider.ops("create"), ["shop/web-0", "shop/web-0"]);
  assert.ok(t.provider.pods.has("shop/web-0"));
  await t.stop();
});

Deno.test("a pod changed in the API while an event was missed is synced at the next resync", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  t.api.pods.deliver = false;
  const current = t.api.pods.pods.get("shop/web-0")!;
  const changed = t.api.pods.put({
    ...current,
    spec: { ...current.spec, containers: [{ name: "main", image: "nginx:2" }] },
  });
  t.api.pods.informerInstance.set(changed, { silent: true });
  await t.settle(61_000 * 2);
  assert.deepEqual(t.provider.ops("update"), ["shop/web-0"]);
  await t.stop();
});
