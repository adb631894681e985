import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import { EventRecorder } from "../../core/pods/events.ts";
import { podEventSink } from "../../provider/mod.ts";
import { FakeClock } from "../fakes/clock.ts";
import { FakeEventsApi } from "../core/pods/_fake_api.ts";

const log = getLogger(["vkubelet", "test"]);
const pod: Pod = { metadata: { name: "web-0", namespace: "shop", uid: "u1" } };

function setup() {
  const api = new FakeEventsApi();
  const recorder = new EventRecorder({ api, clock: new FakeClock(), log, nodeName: "vk-1" });
  const event = podEventSink({ events: recorder, log }, "vkubelet-aci");
  return { api, recorder, event };
}

Deno.test("a provider's events share the node's per-pod burst of 25 with the core's", async () => {
  const { api, recorder, event } = setup();
  for (let i = 0; i < 20; i++) {
    recorder.record(pod, { type: "Normal", reason: "Pulled", message: `core ${i}` });
  }
  for (let i = 0; i < 20; i++) event(pod, "Warning", "TaskStopped", `task ${i} stopped`);
  await recorder.flush();
  assert.equal(api.events.size, 25, "a crash-looping remote pod cannot flood the apiserver");
  const fromProvider = [...api.events.values()].filter((e) => e.reason === "TaskStopped");
  assert.equal(fromProvider.length, 5);
});

Deno.test("a provider's repeated event is aggregated into one Event with its count", async () => {
  const { api, recorder, event } = setup();
  event(pod, "Warning", "TaskStopped", "task t1 stopped");
  event(pod, "Warning", "TaskStopped", "task t1 stopped");
  await recorder.flush();
  assert.equal(api.events.size, 1);
  assert.deepEqual(api.patches.map((p) => (p.body as { count: number }).count), [2]);
  const [created] = api.events.values();
  assert.equal(created.source?.component, "vkubelet-aci", "the provider's component is kept");
  assert.equal(created.reportingComponent, "vkubelet-aci");
  assert.equal(created.source?.host, "vk-1");
});
