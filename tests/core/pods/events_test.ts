import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { EventRecorder, type EventRecorderOptions } from "../../../core/pods/events.ts";
import { FakeClock } from "../../fakes/clock.ts";
import { FakeEventsApi } from "./_fake_api.ts";
import { KubeApiError } from "../../../k8s/errors.ts";

const log = getLogger(["vkubelet", "test"]);
const pod: Pod = {
  metadata: { name: "web-0", namespace: "shop", uid: "u1", resourceVersion: "7" },
};

function setup(
  options: Omit<EventRecorderOptions, "api" | "clock" | "log" | "nodeName"> = {},
) {
  const api = new FakeEventsApi();
  const clock = new FakeClock();
  const recorder = new EventRecorder({ api, clock, log, nodeName: "vk-1", ...options });
  return { api, clock, recorder };
}

Deno.test("an event is created in the pod's namespace as the kubelet would", async () => {
  const { api, recorder } = setup();
  recorder.record(pod, {
    type: "Normal",
    reason: "Started",
    message: "Started container main",
    fieldPath: "spec.containers{main}",
  });
  await recorder.flush();
  const [event] = api.events.values();
  assert.equal(event.metadata?.namespace, "shop");
  assert.match(event.metadata!.name!, /^web-0\.[0-9a-f]+$/);
  assert.deepEqual(event.involvedObject, {
    apiVersion: "v1",
    kind: "Pod",
    namespace: "shop",
    name: "web-0",
    uid: "u1",
    resourceVersion: "7",
    fieldPath: "spec.containers{main}",
  });
  assert.deepEqual(event.source, { component: "kubelet", host: "vk-1" });
  assert.equal(event.count, 1);
  assert.equal(event.firstTimestamp, "2026-01-01T00:00:00Z");
});

Deno.test("repeats of an event are aggregated into a count", async () => {
  const { api, clock, recorder } = setup();
  const backoff = {
    type: "Warning" as const,
    reason: "BackOff",
    message: "Back-off restarting failed container",
  };
  recorder.record(pod, backoff);
  recorder.record(pod, backoff);
  await clock.advance(60_000);
  recorder.record(pod, backoff);
  recorder.record(pod, { ...backoff, message: "something else" });
  await recorder.flush();
  assert.equal(api.events.size, 2, "one object per distinct message");
  const aggregated = api.withReason("BackOff").find((e) => e.message === backoff.message)!;
  assert.equal(aggregated.count, 3);
  assert.equal(aggregated.lastTimestamp, "2026-01-01T00:01:00Z");
  assert.equal(aggregated.firstTimestamp, "2026-01-01T00:00:00Z");
});

Deno.test("a pod's events are rate limited, then trickle", async () => {
  const { api, clock, recorder } = setup({ burst: 5 });
  for (let i = 0; i < 20; i++) {
    recorder.record(pod, { type: "Normal", reason: "R", message: `m${i}` });
  }
  await recorder.flush();
  assert.equal(api.events.size, 5);
  await clock.advance(300_000);
  for (let i = 20; i < 25; i++) {
    recorder.record(pod, { type: "Normal", reason: "R", message: `m${i}` });
  }
  await recorder.flush();
  assert.equal(api.events.size, 6, "one more token after five minutes");
  const other = { metadata: { ...pod.metadata, uid: "u2" } };
  recorder.record(other, { type: "Normal", reason: "R", message: "x" });
  await recorder.flush();
  assert.equal(api.events.size, 7, "other pods have their own budget");
});

Deno.test("a failed event write is logged, never thrown", async () => {
  const { api, recorder } = setup();
  api.failNext = 1;
  recorder.record(pod, { type: "Normal", reason: "R", message: "lost" });
  recorder.record(pod, { type: "Normal", reason: "R", message: "kept" });
  await recorder.flush();
  assert.deepEqual([...api.events.values()].map((e) => e.message), ["kept"]);
});

Deno.test("events are sent one at a time, in the order recorded", async () => {
  const { api, recorder } = setup();
  let inFlight = 0;
  let most = 0;
  const create = api.create.bind(api);
  api.create = async (namespace, event) => {
    most = Math.max(most, ++inFlight);
    await new Promise((r) => setTimeout(r, 1));
    inFlight--;
    return await create(namespace, event);
  };
  for (let i = 0; i < 10; i++) {
    recorder.record({ metadata: { ...pod.metadata, uid: `u${i}` } }, {
      type: "Normal",
      reason: "Started",
      message: `m${i}`,
    });
  }
  assert.equal(recorder.queued, 9, "one in flight");
  await recorder.flush();
  assert.equal(most, 1);
  assert.deepEqual(
    [...api.events.values()].map((e) => e.message),
    Array.from({ length: 10 }, (_, i) => `m${i}`),
  );
});

Deno.test("a full event queue drops newer events, and flush gives up when its signal aborts", async () => {
  const unsent: number[] = [];
  const { api, recorder } = setup({ maxQueued: 2, onUnsent: (count) => unsent.push(count) });
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const create = api.create.bind(api);
  api.create = async (namespace, event) => {
    await gate;
    return await create(namespace, event);
  };
  for (let i = 0; i < 5; i++) {
    recorder.record({ metadata: { ...pod.metadata, uid: `u${i}` } }, {
      type: "Normal",
      reason: "R",
      message: `m${i}`,
    });
  }
  assert.equal(recorder.queued, 2, "one in flight, two waiting, two dropped");
  const deadline = new AbortController();
  deadline.abort();
  await recorder.flush({ signal: deadline.signal });
  assert.equal(recorder.queued, 0, "the waiting ones are dropped at shutdown");
  assert.deepEqual(unsent, [2], "and their number is told");
  release();
  await recorder.flush();
  assert.deepEqual([...api.events.values()].map((e) => e.message), ["m0"]);
});

Deno.test("events wait while status writes wait, at most maxHoldMs, then go for a second", async () => {
  let busy = true;
  const { api, clock, recorder } = setup({ holdWhile: () => busy, maxHoldMs: 5_000 });
  const record = (i: number) =>
    recorder.record({ metadata: { ...pod.metadata, uid: `u${i}` } }, {
      type: "Normal",
      reason: "Started",
      message: `m${i}`,
    });
  record(0);
  await clock.advance(4_900);
  assert.equal(api.events.size, 0, "held while status writes wait");
  await clock.advance(100);
  assert.equal(api.events.size, 1, "a hold ends after maxHoldMs");
  record(1);
  await clock.advance(500);
  assert.equal(api.events.size, 2, "then events go unheld for a second");
  await clock.advance(600);
  record(2);
  await clock.advance(100);
  assert.equal(api.events.size, 2, "and the next hold begins");
  busy = false;
  await clock.advance(100);
  assert.equal(api.events.size, 3, "released as soon as the status writes are done");
});

Deno.test("flush sends held events at once (shutdown does not wait for the status queue)", async () => {
  const { api, recorder } = setup({ holdWhile: () => true });
  recorder.record(pod, { type: "Normal", reason: "Killing", message: "Stopping container main" });
  await recorder.flush();
  assert.equal(api.events.size, 1);
});

Deno.test("events in a namespace being deleted are one info line, not a warning per pod", async () => {
  const { api, clock, recorder } = setup();
  const records: Array<{ level: string; message: string }> = [];
  const logger = (level: string) => (message: string) => records.push({ level, message });
  const quiet = new EventRecorder({
    api,
    clock,
    nodeName: "vk-1",
    log: { debug: logger("debug"), info: logger("info"), warn: logger("warning") } as never,
  });
  let creates = 0;
  api.create = (namespace: string) => {
    creates++;
    return Promise.reject(
      new KubeApiError(403, {
        method: "POST",
        path: `/api/v1/namespaces/${namespace}/events`,
        status: {
          reason: "Forbidden",
          message:
            `events is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
          details: { causes: [{ reason: "NamespaceTerminating", field: "metadata.namespace" }] },
        },
      }),
    );
  };
  for (let i = 0; i < 450; i++) {
    const member = { metadata: { name: `p-${i}`, namespace: "gone", uid: `u-${i}` } };
    quiet.record(member, { type: "Normal", reason: "Killing", message: "Stopping container" });
  }
  await quiet.flush();
  assert.deepEqual(records.filter((r) => r.level !== "debug").map((r) => r.level), ["info"]);
  assert.match(records.find((r) => r.level === "info")!.message, /is being deleted/);
  assert.equal(creates, 1, "the queued events of that namespace are not sent one by one");
  await recorder.flush();
});

Deno.test("pods that go are forgotten after their queued events, back to nothing held", async () => {
  const { api, recorder } = setup();
  const started = { type: "Normal" as const, reason: "Started", message: "Started container main" };
  for (let round = 0; round < 3; round++) {
    const pods = Array.from({ length: 100 }, (_, i) => ({
      metadata: { name: `web-${i}`, namespace: "shop", uid: `u-${round}-${i}` },
    }));
    for (const p of pods) recorder.record(p, started);
    for (const p of pods) recorder.record(p, { ...started, reason: "Killing" });
    // Forgotten while their events still wait: those are sent first, and the repeat below,
    // queued before the forget, is still aggregated into the first event.
    recorder.record(pods[0], started);
    for (const p of pods) recorder.forgetPod(p.metadata.uid);
    assert.ok(recorder.trackedPods > 0, "state is kept until the queued events are sent");
    await recorder.flush();
    assert.equal(recorder.trackedPods, 0);
  }
  assert.equal(api.events.size, 600);
  assert.equal(api.patches.length, 3, "one aggregated repeat per round");
  recorder.forgetPod("never-seen"); // harmless
  assert.equal(recorder.trackedPods, 0);
});

Deno.test("without forgets the recorder keeps at most 4,096 events, the most recent", async () => {
  const { api, recorder } = setup();
  const event = { type: "Normal" as const, reason: "Started", message: "Started container main" };
  const podOf = (i: number) => ({ metadata: { name: `p${i}`, namespace: "shop", uid: `u${i}` } });
  for (let i = 0; i < 5000; i++) recorder.record(podOf(i), event);
  await recorder.flush();
  assert.equal(api.events.size, 5000);
  recorder.record(podOf(4999), event); // still known: aggregated
  recorder.record(podOf(0), event); // pushed out by 4,096 newer pods: a new event
  await recorder.flush();
  assert.equal(api.patches.length, 1);
  assert.equal(api.events.size, 5001);
});
