import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { EPHEMERAL_NOT_SUPPORTED, withEphemeralContainers } from "../../../core/pods/ephemeral.ts";
import type { PodEvent } from "../../../core/pods/events.ts";
import { mockProvider, samplePod } from "../../providers/mock/_setup.ts";
import { boundPod, startController } from "./_harness.ts";

const debug = { name: "debugger", image: "busybox", command: ["sleep", "3600"] };

Deno.test("a provider without the capability reports ephemeral containers waiting, with a Warning", async () => {
  const t = startController();
  const pod = t.api.pods.put(boundPod("web-0"));
  await t.controller.ready;
  await t.settle();
  const running = t.api.pods.pods.get("shop/web-0")!;
  t.api.pods.put({ ...running, spec: { ...running.spec!, ephemeralContainers: [debug] } });
  await t.settle();
  const status = t.api.pods.pods.get("shop/web-0")!.status!;
  assert.equal(status.phase, "Running", "the pod keeps running");
  const [ephemeral] = status.ephemeralContainerStatuses ?? [];
  assert.equal(ephemeral?.name, "debugger");
  assert.equal(ephemeral.state?.waiting?.reason, EPHEMERAL_NOT_SUPPORTED);
  assert.match(ephemeral.state?.waiting?.message ?? "", /cannot run ephemeral containers/);
  const [event] = t.api.events.withReason(EPHEMERAL_NOT_SUPPORTED);
  assert.equal(event?.type, "Warning");
  assert.equal(event.involvedObject.uid, pod.metadata?.uid);
  assert.equal(event.involvedObject.fieldPath, "spec.ephemeralContainers{debugger}");
  await t.settle(60_000);
  assert.equal(t.api.events.withReason(EPHEMERAL_NOT_SUPPORTED)[0].count ?? 1, 1, "one event");
  await t.stop();
});

Deno.test("a provider with runEphemeralContainer starts each ephemeral container once", async () => {
  const { provider, options } = mockProvider();
  const events: PodEvent[] = [];
  const wrapped = withEphemeralContainers(provider, (_pod, e) => events.push(e));
  let calls = 0;
  const run = provider.runEphemeralContainer.bind(provider);
  provider.runEphemeralContainer = (pod: Pod, name: string, o) => {
    calls++;
    return run(pod, name, o);
  };
  const pod = samplePod("web");
  await wrapped.createPod(pod, options);
  const debugged = { ...pod, spec: { ...pod.spec!, ephemeralContainers: [debug] } };
  await wrapped.updatePod(debugged, options);
  await wrapped.updatePod(debugged, options);
  const status = (await wrapped.getPod("default", "web", options))!.status!;
  const [ephemeral] = status.ephemeralContainerStatuses ?? [];
  assert.equal(ephemeral?.name, "debugger");
  assert.ok(ephemeral.state?.running?.startedAt, "running");
  assert.equal(ephemeral.ready, false);
  assert.equal(calls, 1, "started once");
  assert.deepEqual(events, []);
  assert.equal(typeof wrapped.getStatsSummary, "function", "other capabilities pass through");
});
