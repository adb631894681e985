import assert from "node:assert/strict";
import { boundPod, startController } from "./_harness.ts";

const secretVolume = {
  volumes: [{ name: "creds", secret: { secretName: "nope" } }],
};

Deno.test("a pod whose Secret volume is missing waits ContainerCreating with FailedMount, backing off, and starts once it exists", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0", secretVolume));
  await t.controller.ready;
  await t.settle();
  const [event] = t.api.events.withReason("FailedMount");
  assert.equal(
    event?.message,
    'MountVolume.SetUp failed for volume "creds" : secret "nope" not found',
  );
  assert.equal(event.type, "Warning");
  const status = t.api.pods.pods.get("shop/web-0")!.status;
  assert.equal(status?.phase, "Pending");
  assert.equal(status?.containerStatuses?.[0].state?.waiting?.reason, "ContainerCreating");
  assert.equal(t.provider.ops("create").length, 0);
  // Retried with backoff (0.2 s doubling): a handful of attempts in 20 s, not a hot loop.
  for (let i = 0; i < 20; i++) await t.settle(1_000);
  const attempts = t.api.events.withReason("FailedMount")[0].count ?? 1;
  assert.ok(attempts >= 3 && attempts <= 9, `${attempts} FailedMount events in 20 s`);
  assert.equal(t.provider.ops("create").length, 0);
  t.api.secrets.put({ metadata: { name: "nope", namespace: "shop" }, data: {} });
  await t.settle();
  assert.deepEqual(t.provider.ops("create"), ["shop/web-0"]);
  assert.equal(t.api.pods.pods.get("shop/web-0")!.status?.phase, "Running");
  await t.stop();
});

Deno.test("optional volume sources may be missing; a listed key that is missing is not", async () => {
  const t = startController();
  t.api.configMaps.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "1" } });
  t.api.pods.put(boundPod("optional", {
    volumes: [
      { name: "s", secret: { secretName: "absent", optional: true } },
      { name: "p", projected: { sources: [{ configMap: { name: "gone", optional: true } }] } },
    ],
  }));
  t.api.pods.put(boundPod("keyed", {
    volumes: [{ name: "c", configMap: { name: "cfg", items: [{ key: "b", path: "b" }] } }],
  }));
  await t.controller.ready;
  await t.settle();
  assert.deepEqual(t.provider.ops("create"), ["shop/optional"]);
  assert.deepEqual(t.api.events.withReason("FailedMount").map((e) => e.message), [
    'MountVolume.SetUp failed for volume "c" : configmap references non-existent config key: b',
  ]);
  await t.stop();
});

Deno.test("a missing or unbound PersistentVolumeClaim holds the pod with the kubelet's message", async () => {
  const t = startController();
  t.api.pods.put(boundPod("db", {
    volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data-db" } }],
  }));
  await t.controller.ready;
  await t.settle();
  assert.equal(
    t.api.events.withReason("FailedMount")[0]?.message,
    "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], " +
      "failed to process volumes=[data]: error processing PVC shop/data-db: failed to fetch PVC " +
      'from API server: persistentvolumeclaims "data-db" not found',
  );
  t.api.persistentVolumeClaims.put({
    metadata: { name: "data-db", namespace: "shop" },
    spec: { volumeName: "pv-1" },
    status: { phase: "Bound" },
  });
  await t.settle(60_000);
  assert.deepEqual(t.provider.ops("create"), ["shop/db"]);
  await t.stop();
});

Deno.test("an image reference that does not parse is InvalidImageName and never reaches the provider", async () => {
  const t = startController();
  const image = "Not A//Valid::Image@@sha256:zz";
  t.api.pods.put(boundPod("bad", { containers: [{ name: "main", image }] }));
  await t.controller.ready;
  await t.settle();
  const [event] = t.api.events.withReason("InspectFailed");
  const message = `Failed to apply default image tag "${image}": couldn't parse image name ` +
    `"${image}": invalid reference format: repository name (/Valid) must be lowercase`;
  assert.equal(event?.message, message);
  assert.equal(event.involvedObject.fieldPath, "spec.containers{main}");
  const waiting = t.api.pods.pods.get("shop/bad")!.status?.containerStatuses?.[0].state?.waiting;
  assert.deepEqual(waiting, { reason: "InvalidImageName", message });
  assert.equal(t.provider.ops("create").length, 0);
  await t.stop();
});

Deno.test("a missing mandatory Secret also records virtual-kubelet's MandatorySecretNotFound", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0", {
    containers: [{
      name: "main",
      env: [{ name: "A", valueFrom: { secretKeyRef: { name: "s", key: "a" } } }],
    }],
  }));
  await t.controller.ready;
  await t.settle();
  assert.equal(t.api.events.withReason("Failed")[0]?.message, 'Error: secret "s" not found');
  const [event] = t.api.events.withReason("MandatorySecretNotFound");
  assert.equal(event?.type, "Warning");
  assert.equal(event.message, 'secret "s" not found');
  assert.equal(event.involvedObject.fieldPath, "spec.containers{main}");
  await t.stop();
});
