import assert from "node:assert/strict";
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  CORDONED_ANNOTATION,
  kubeletVersion,
  OWNED_KEYS_ANNOTATION,
  PING_FAILED_REASON,
} from "../../../core/node/mod.ts";
import { FakeNodeApi } from "./fakes.ts";
import { advanceBy, startNodeSide } from "./_harness.ts";
import { FakeClock } from "../../fakes/clock.ts";

const condition = (node: Node | undefined, type: string) =>
  node?.status?.conditions?.find((c) => c.type === type);

Deno.test("node is registered Ready with labels, taint, capacity, addresses and node info", async () => {
  const side = await startNodeSide();
  try {
    await side.node.ready;
    const node = side.api.node!;
    assert.equal(side.api.count("createNode"), 1);
    assert.deepEqual(node.metadata?.labels, {
      "type": "virtual-kubelet",
      "kubernetes.io/role": "agent",
      "kubernetes.io/hostname": "vk-test",
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": node.metadata?.labels?.["kubernetes.io/arch"],
      "node.kubernetes.io/exclude-from-external-load-balancers": "true",
    });
    assert.deepEqual(node.spec?.taints, [
      { key: "virtual-kubelet.io/provider", value: "mock", effect: "NoSchedule" },
    ]);
    assert.equal(node.spec?.providerID, "vkubelet://vk-test");
    assert.deepEqual(node.status?.capacity, { cpu: "8", memory: "32Gi", pods: "100" });
    assert.deepEqual(node.status?.addresses, [
      { type: "InternalIP", address: "10.0.0.5" },
      { type: "Hostname", address: "vk-test" },
    ]);
    assert.equal(node.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250);
    assert.equal(node.status?.nodeInfo?.kubeletVersion, "v1.37.2-vkubelet-0.1.0");
    assert.equal(kubeletVersion("1.2.3", "1.30.0"), "v1.30.0-vkubelet-1.2.3");
    const types = node.status?.conditions?.map((c) => c.type).sort();
    assert.deepEqual(types, [
      "DiskPressure",
      "MemoryPressure",
      "NetworkUnavailable",
      "PIDPressure",
      "ProviderReachable",
      "Ready",
    ]);
    const ready = condition(node, "Ready")!;
    assert.equal(ready.status, "True");
    assert.equal(ready.reason, "KubeletReady");
    assert.ok(ready.lastHeartbeatTime && ready.lastTransitionTime);
    assert.equal(condition(node, "MemoryPressure")?.status, "False");
  } finally {
    await side.stop();
  }
});

Deno.test("taint can be overridden or disabled", async () => {
  const custom = await startNodeSide({
    node: { taint: { key: "example.com/virtual", value: "yes", effect: "NoExecute" } },
  });
  await custom.stop();
  assert.deepEqual(custom.api.node!.spec?.taints, [
    { key: "example.com/virtual", value: "yes", effect: "NoExecute" },
  ]);
  const none = await startNodeSide({ node: { taint: false } });
  await none.stop();
  assert.deepEqual(none.api.node!.spec?.taints, []);
});

Deno.test("nothing is written while nothing changed; status is re-sent once a minute", async () => {
  const side = await startNodeSide({ lease: { random: () => 0 } });
  try {
    const statusWrites = () => side.api.count("patchNodeStatus");
    await advanceBy(side.clock, 50_000, 5_000);
    assert.equal(statusWrites(), 0, "a status write with nothing changed");
    assert.ok(side.api.count("getNode") >= 5, "the status is not being checked");
    await advanceBy(side.clock, 250_000, 5_000);
    // 5 minutes: one heartbeat write a minute, and the lease every 10 s.
    assert.ok(statusWrites() >= 4 && statusWrites() <= 5, `${statusWrites()} status writes`);
    assert.equal(side.api.count("updateLease"), 30);
    assert.equal(side.api.count("createNode"), 1);
  } finally {
    await side.stop();
  }
});

Deno.test("a provider change is written at once", async () => {
  const side = await startNodeSide();
  try {
    side.provider.capacity = { cpu: "16", memory: "64Gi", pods: "200" };
    side.provider.changed();
    await advanceBy(side.clock, 100, 100);
    assert.equal(side.api.count("patchNodeStatus"), 1);
    assert.deepEqual(side.api.node!.status?.capacity, { cpu: "16", memory: "64Gi", pods: "200" });
  } finally {
    await side.stop();
  }
});

Deno.test("status updates keep conditions, labels, annotations and resources of other writers", async () => {
  const side = await startNodeSide();
  try {
    const node = side.api.node!;
    side.api.node = {
      ...node,
      metadata: {
        ...node.metadata,
        labels: { ...node.metadata?.labels, "team": "blue" },
        annotations: { ...node.metadata?.annotations, "example.com/note": "hello" },
      },
      status: {
        ...node.status,
        capacity: { ...node.status?.capacity, "example.com/dongle": "4" },
        conditions: [
          ...node.status!.conditions!,
          { type: "ExampleProblem", status: "False", reason: "AllGood", message: "fine" },
        ],
      },
    };
    side.provider.labels = { "vkubelet.io/zone": "a" };
    side.provider.changed();
    await advanceBy(side.clock, 100, 100);
    assert.equal(side.api.count("patchNodeStatus"), 1);
    const after = side.api.node!;
    assert.equal(after.metadata?.labels?.team, "blue");
    assert.equal(after.metadata?.labels?.["vkubelet.io/zone"], "a");
    assert.equal(after.metadata?.annotations?.["example.com/note"], "hello");
    assert.equal(after.status?.capacity?.["example.com/dongle"], "4");
    assert.equal(condition(after, "ExampleProblem")?.reason, "AllGood");
    // The patch itself never names a foreign key.
    const patch = JSON.stringify(side.api.calls.find((c) => c.name === "patchNodeStatus")!.args);
    for (const foreign of ["team", "example.com/note", "dongle", "ExampleProblem"]) {
      assert.ok(!patch.includes(foreign), `patch names ${foreign}`);
    }
  } finally {
    await side.stop();
  }
});

Deno.test("a label vkubelet no longer wants is removed, also across restarts", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const first = await startNodeSide({ clock, api, node: { labels: { "tier": "gold" } } });
  await first.stop();
  assert.equal(api.node!.metadata?.labels?.tier, "gold");
  assert.match(api.node!.metadata!.annotations![OWNED_KEYS_ANNOTATION], /tier/);
  const second = await startNodeSide({ clock, api });
  await second.stop();
  assert.equal(api.node!.metadata?.labels?.tier, undefined);
  assert.equal(api.count("createNode"), 1);
});

Deno.test("ping failure stops lease renewal and sets Ready False with the reason; recovery resumes both", async () => {
  const side = await startNodeSide({ lease: { random: () => 0.5 } });
  try {
    side.provider.pingError = new Error("backend unreachable");
    await advanceBy(side.clock, 10_000, 500);
    const ready = condition(side.api.node, "Ready")!;
    assert.equal(ready.status, "False");
    assert.equal(ready.reason, PING_FAILED_REASON);
    assert.match(ready.message!, /backend unreachable/);
    const renewals = side.api.count("updateLease");
    const renewTime = side.api.lease!.spec!.renewTime;
    await advanceBy(side.clock, 60_000, 5_000);
    assert.equal(side.api.count("updateLease"), renewals, "the lease was renewed while unhealthy");
    assert.equal(side.api.lease!.spec!.renewTime, renewTime);
    // While unhealthy the status is the heartbeat, so Ready keeps saying why.
    assert.ok(side.api.count("patchNodeStatus") >= 6);
    assert.ok(
      side.records.some((r) => r.level === "warning" && /not renewing lease/.test(r.message)),
    );

    side.provider.pingError = undefined;
    for (let i = 0; i < 22 && condition(side.api.node, "Ready")?.status !== "True"; i++) {
      await side.clock.advance(500);
    }
    assert.equal(condition(side.api.node, "Ready")?.status, "True");
    // The lease is renewed as soon as the ping recovers, not an interval later.
    assert.ok(side.api.count("updateLease") > renewals, "the lease was not renewed after recovery");
    assert.equal(Date.parse(side.api.lease!.spec!.renewTime!), side.clock.now());
  } finally {
    await side.stop();
  }
});

Deno.test("a deleted node is registered again, logged, and the lease follows the new uid", async () => {
  const side = await startNodeSide({ lease: { random: () => 0 } });
  try {
    const oldUid = side.node.uid();
    side.api.node = undefined;
    await advanceBy(side.clock, 10_000, 500);
    assert.equal(side.api.count("createNode"), 2);
    const newUid = side.api.node!.metadata!.uid;
    assert.notEqual(newUid, oldUid);
    assert.ok(side.records.some((r) => r.level === "warning" && /deleted/.test(r.message)));
    await advanceBy(side.clock, 10_000, 500);
    assert.equal(side.api.lease!.metadata!.ownerReferences![0].uid, newUid);
  } finally {
    await side.stop();
  }
});

Deno.test("with recreateNode off a deleted node stays away and the lease stops", async () => {
  const side = await startNodeSide({ node: { recreateNode: false }, lease: { random: () => 0 } });
  try {
    side.api.node = undefined;
    await advanceBy(side.clock, 30_000, 1_000);
    assert.equal(side.api.count("createNode"), 1);
    const errors = side.records.filter((r) => r.level === "error" && /deleted/.test(r.message));
    assert.equal(errors.length, 1);
    const renewals = side.api.count("updateLease");
    await advanceBy(side.clock, 30_000, 1_000);
    assert.equal(side.api.count("updateLease"), renewals);
  } finally {
    await side.stop();
  }
});

Deno.test("labels NodeRestriction forbids are dropped with one warning, on create and on adopt", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  api.restrictedLabels.add("kubernetes.io/role");
  const side = await startNodeSide({ clock, api });
  await side.node.ready;
  await advanceBy(clock, 120_000, 5_000);
  await side.stop();
  assert.equal(api.count("createNode"), 2);
  assert.equal(api.node!.metadata?.labels?.["kubernetes.io/role"], undefined);
  assert.equal(api.node!.metadata?.labels?.type, "virtual-kubelet");
  const warnings = side.records.filter((r) => /NodeRestriction/.test(r.message));
  assert.equal(warnings.length, 1);
  assert.equal(warnings[0].properties.labels, "kubernetes.io/role");

  // Adopting a node an admin labelled: the label is neither re-set nor removed.
  api.node = {
    ...api.node!,
    metadata: { ...api.node!.metadata, labels: { ...api.node!.metadata?.labels, x: "1" } },
  };
  const again = await startNodeSide({ clock, api });
  await again.node.ready;
  await again.stop();
  assert.equal(api.node!.metadata?.labels?.x, "1");
  assert.equal(api.node!.metadata?.labels?.["kubernetes.io/role"], undefined);
  assert.equal(again.records.filter((r) => /NodeRestriction/.test(r.message)).length, 1);
});

Deno.test("adopting keeps the existing spec: unschedulable, taints and providerID", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  api.node = {
    metadata: { name: "vk-test", uid: "existing", labels: { "kubernetes.io/role": "agent" } },
    spec: {
      unschedulable: true,
      providerID: "other://vk-test",
      taints: [{ key: "dedicated", value: "ml", effect: "NoSchedule" }],
    },
    status: { conditions: [{ type: "Ready", status: "Unknown", reason: "NodeStatusUnknown" }] },
  };
  const side = await startNodeSide({ clock, api });
  await side.node.ready;
  await side.stop();
  assert.equal(api.count("createNode"), 0);
  assert.equal(side.node.uid(), "existing");
  assert.equal(api.node.spec?.unschedulable, true);
  assert.deepEqual(api.node.spec?.taints, [{
    key: "dedicated",
    value: "ml",
    effect: "NoSchedule",
  }]);
  assert.equal(api.node.spec?.providerID, "other://vk-test");
  assert.equal(condition(api.node, "Ready")?.status, "True");
  assert.equal(api.node.metadata?.labels?.type, "virtual-kubelet");
});

Deno.test("cordon on shutdown is undone on the next start, an admin's cordon is not", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const first = await startNodeSide({ clock, api, node: { cordonOnShutdown: true } });
  await first.stop();
  assert.equal(api.node!.spec?.unschedulable, true);
  assert.equal(api.node!.metadata?.annotations?.[CORDONED_ANNOTATION], "2026-01-01T00:00:00.000Z");
  const second = await startNodeSide({ clock, api });
  await second.node.ready;
  await second.stop();
  assert.equal(api.node!.spec?.unschedulable, undefined);
  assert.equal(api.node!.metadata?.annotations?.[CORDONED_ANNOTATION], undefined);

  api.node = { ...api.node!, spec: { ...api.node!.spec, unschedulable: true } }; // An admin.
  const third = await startNodeSide({ clock, api, node: { cordonOnShutdown: true } });
  await third.stop();
  const fourth = await startNodeSide({ clock, api });
  await fourth.stop();
  assert.equal(api.node!.spec?.unschedulable, true);
});

Deno.test("a shutdown cordon an admin wrote again while vkubelet was down is left on the next start", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const first = await startNodeSide({ clock, api, node: { cordonOnShutdown: true } });
  await first.stop();
  assert.equal(api.node!.spec?.unschedulable, true, "not cordoned on shutdown");
  // `kubectl uncordon`, then `kubectl cordon`, while vkubelet is down.
  await api.patchAs("kubectl", { spec: { unschedulable: null } });
  await api.patchAs("kubectl", { spec: { unschedulable: true } });
  const second = await startNodeSide({ clock, api });
  await second.node.ready;
  await second.stop();
  assert.equal(api.node!.spec?.unschedulable, true, "the admin's cordon was undone");
  assert.equal(api.node!.metadata?.annotations?.[CORDONED_ANNOTATION], undefined);
  assert.ok(second.records.some((r) => /stays cordoned/.test(r.message)));
});

Deno.test("registration retries with backoff until the apiserver answers", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const { apiError } = await import("./fakes.ts");
  for (let i = 0; i < 3; i++) api.failNext("getNode", apiError(503, "ServiceUnavailable", "down"));
  const side = await startNodeSide({ clock, api });
  try {
    assert.equal(api.count("createNode"), 0);
    await advanceBy(clock, 2_000, 50);
    await side.node.ready;
    assert.equal(api.count("createNode"), 1);
    const gets = api.calls.filter((c) => c.name === "getNode").map((c) => c.at - api.calls[0].at);
    assert.ok(gets[1] >= 80 && gets[2] - gets[1] >= 160, `retries at ${gets.join(", ")} ms`);
  } finally {
    await side.stop();
  }
});

Deno.test("ready rejects when run stops before the node is registered", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const { apiError } = await import("./fakes.ts");
  for (let i = 0; i < 20; i++) api.failNext("getNode", apiError(503, "ServiceUnavailable", "down"));
  const side = await startNodeSide({ clock, api });
  await side.stop();
  await assert.rejects(side.node.ready);
});

Deno.test("declared features are published in the node status", async () => {
  const side = await startNodeSide({ node: { declaredFeatures: ["ExtendWebSocketsToKubelet"] } });
  try {
    const status = side.api.node!.status as { declaredFeatures?: string[] };
    assert.deepEqual(status.declaredFeatures, ["ExtendWebSocketsToKubelet"]);
  } finally {
    await side.stop();
  }
});

Deno.test("an apiserver that drops declaredFeatures does not get a status write every cycle", async () => {
  const clock = new FakeClock();
  const side = await startNodeSide({
    clock,
    api: Object.assign(new FakeNodeApi(() => clock.now()), { knowsDeclaredFeatures: false }),
    node: { declaredFeatures: ["ExtendWebSocketsToKubelet"] },
    lease: { random: () => 0 },
  });
  try {
    await advanceBy(side.clock, 50_000, 5_000);
    assert.equal(side.api.count("patchNodeStatus"), 0, "status rewritten with nothing changed");
    assert.ok(
      side.records.some((r) => String(r.message).includes("declaredFeatures")),
      "the dropped field is reported",
    );
  } finally {
    await side.stop();
  }
});

Deno.test("a registration failure says how long the attempt took and when the next starts", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const { apiError } = await import("./fakes.ts");
  const getNode = api.getNode.bind(api);
  let slow = 1;
  // The first attempt fails only after 8 s, as a read the client retried for that long.
  api.getNode = async (name: string) => {
    if (slow-- > 0) {
      await clock.sleep(8_000);
      throw apiError(503, "ServiceUnavailable", "down");
    }
    return await getNode(name);
  };
  const side = await startNodeSide({ clock, api });
  try {
    await advanceBy(clock, 10_000, 100);
    await side.node.ready;
    const failure = side.records.find((r) => /registering node/.test(r.message));
    assert.ok(failure, JSON.stringify(side.records));
    assert.equal(failure.properties?.elapsed, 8_000);
    const delay = failure.properties?.delay as number;
    assert.ok(delay >= 80 && delay <= 100, `next attempt in ${delay} ms`);
    assert.match(
      failure.message,
      /failed after \{elapsed\} ms: \{err\}; trying again in \{delay\} ms/,
    );
  } finally {
    await side.stop();
  }
});
