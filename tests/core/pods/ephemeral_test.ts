import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { EPHEMERAL_NOT_SUPPORTED } from "../../../core/pods/ephemeral.ts";
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
  const t = startController();
  const started: string[] = [];
  // The provider runs it and reports it running from then on.
  t.provider.runEphemeralContainer = (pod: Pod, name: string) => {
    started.push(`${pod.metadata?.name}/${name}`);
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    const stored = t.provider.pods.get(key)!;
    t.provider.pods.set(key, { ...stored, spec: pod.spec });
    t.provider.setStatus(key, (s) => ({
      ...s,
      ephemeralContainerStatuses: [{
        name,
        image: debug.image,
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
      }],
    }));
    return Promise.resolve();
  };
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  const running = t.api.pods.pods.get("shop/web-0")!;
  t.api.pods.put({ ...running, spec: { ...running.spec!, ephemeralContainers: [debug] } });
  await t.settle();
  await t.settle(70_000); // a resync: nothing starts it again
  const [ephemeral] = t.api.pods.pods.get("shop/web-0")!.status!.ephemeralContainerStatuses ?? [];
  assert.equal(ephemeral?.name, "debugger");
  assert.ok(ephemeral.state?.running?.startedAt, "running");
  assert.deepEqual(started, ["web-0/debugger"], "started once");
  assert.deepEqual(t.api.events.withReason(EPHEMERAL_NOT_SUPPORTED), []);
  await t.stop();
});

Deno.test("a pod's unsupported ephemeral containers are forgotten with the pod, not shown on the next of its name", async () => {
  const t = startController({ push: false }); // statuses come from getPodStatus
  t.api.pods.put(boundPod("web-0", { ephemeralContainers: [debug] }));
  await t.settle(10_000);
  const first = t.api.pods.pods.get("shop/web-0")!.status!;
  assert.equal(
    first.ephemeralContainerStatuses?.[0]?.state?.waiting?.reason,
    EPHEMERAL_NOT_SUPPORTED,
  );
  // The provider lost the pod (its host restarted, say), then the object is deleted.
  t.provider.pods.delete("shop/web-0");
  await t.api.pods.delete("shop", "web-0");
  await t.settle(1_000);
  assert.deepEqual(t.controller.held, { records: 0, timers: 0, events: 0 });
  // A new pod of the same name, without ephemeral containers.
  t.api.pods.put(boundPod("web-0"));
  await t.settle(10_000);
  const second = t.api.pods.pods.get("shop/web-0")!.status!;
  assert.equal(second.phase, "Running");
  assert.deepEqual(second.ephemeralContainerStatuses ?? [], []);
  await t.stop();
});
