import assert from "node:assert/strict";
import type { Node } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput, isNotFound, isTransient } from "../../../provider/mod.ts";
import { ANNOTATIONS } from "../../../providers/mock/mod.ts";
import { mockProvider, samplePod } from "./_setup.ts";

Deno.test("a created pod is Running at once with kubelet-like status", async () => {
  const { provider, options, clock } = mockProvider();
  await provider.createPod(samplePod(), options);
  const pod = await provider.getPod("default", "web", options);
  const status = pod!.status!;
  assert.equal(status.phase, "Running");
  assert.match(status.podIP!, /^127\.80\.\d+\.\d+$/);
  assert.deepEqual(status.podIPs, [{ ip: status.podIP }]);
  assert.equal(status.hostIP, "127.0.0.1");
  assert.equal(status.startTime, new Date(clock.now()).toISOString().replace(".000Z", "Z"));
  assert.equal(status.qosClass, "BestEffort");
  const conditions = Object.fromEntries(status.conditions!.map((c) => [c.type, c.status]));
  assert.deepEqual(conditions, {
    PodScheduled: "True",
    PodReadyToStartContainers: "True",
    Initialized: "True",
    Ready: "True",
    ContainersReady: "True",
  });
  const [app] = status.containerStatuses!;
  assert.equal(app.ready, true);
  assert.equal(app.started, true);
  assert.equal(app.restartCount, 0);
  assert.match(app.containerID!, /^mock:\/\/[0-9a-f]{32}$/);
  assert.match(app.imageID!, /^mock:\/\/nginx:1\.27@sha256:[0-9a-f]{64}$/);
  assert.ok(app.state?.running?.startedAt);
});

Deno.test("init containers complete first and sidecars keep running", async () => {
  const { provider, options } = mockProvider();
  await provider.createPod(
    samplePod("with-init", {
      initContainers: [
        { name: "setup", image: "busybox" },
        { name: "proxy", image: "envoy", restartPolicy: "Always" },
      ],
    }),
    options,
  );
  const status = (await provider.getPod("default", "with-init", options))!.status!;
  const [setup, proxy] = status.initContainerStatuses!;
  assert.deepEqual(setup.state?.terminated?.exitCode, 0);
  assert.equal(setup.state?.terminated?.reason, "Completed");
  assert.ok(proxy.state?.running);
  assert.equal(proxy.ready, true);
});

Deno.test("QoS class follows requests and limits", async () => {
  const { provider, options } = mockProvider();
  const resources = (requests: Record<string, string>, limits: Record<string, string>) => [
    { name: "app", image: "x", resources: { requests, limits } },
  ];
  await provider.createPod(
    samplePod("guaranteed", { containers: resources({}, { cpu: "1", memory: "1Gi" }) }),
    options,
  );
  await provider.createPod(
    samplePod("burstable", { containers: resources({ cpu: "100m" }, {}) }),
    options,
  );
  assert.equal(
    (await provider.getPod("default", "guaranteed", options))!.status!.qosClass,
    "Guaranteed",
  );
  assert.equal(
    (await provider.getPod("default", "burstable", options))!.status!.qosClass,
    "Burstable",
  );
});

Deno.test("every change is pushed through notifyPods", async () => {
  const { provider, options, notified } = mockProvider();
  const pod = samplePod();
  await provider.createPod(pod, options);
  await provider.updatePod({ ...pod, metadata: { ...pod.metadata, labels: { v: "2" } } }, options);
  await provider.deletePod(pod, options);
  assert.deepEqual(notified.map((p) => p.status?.phase), ["Running", "Running", "Succeeded"]);
  assert.deepEqual(notified[1].metadata?.labels, { v: "2" });
});

Deno.test("after notifyPods' unsubscribe the callback is told nothing more", async () => {
  const { provider, options, notified } = mockProvider();
  const late: string[] = [];
  const off = provider.notifyPods((pod) => late.push(pod.status?.phase ?? ""));
  await provider.createPod(samplePod(), options);
  off();
  await provider.deletePod(samplePod(), options);
  assert.deepEqual(late, ["Running"]);
  assert.deepEqual(notified.map((p) => p.status?.phase), ["Running", "Succeeded"]);
});

Deno.test("deletePod reports terminated containers, then forgets the pod and its IP", async () => {
  const { provider, options, notified, clock } = mockProvider();
  await provider.createPod(samplePod("a"), options);
  const ipOfA = (await provider.getPod("default", "a", options))!.status!.podIP;
  await clock.advance(5000);
  await provider.deletePod(samplePod("a"), options);
  const last = notified.at(-1)!;
  assert.equal(last.status?.phase, "Succeeded");
  const terminated = last.status?.containerStatuses?.[0].state?.terminated;
  assert.equal(terminated?.exitCode, 0);
  assert.equal(terminated?.reason, "Completed");
  assert.equal(last.status?.containerStatuses?.[0].ready, false);
  assert.deepEqual(await provider.listPods(options), []);
  assert.equal(await provider.getPod("default", "a", options), undefined);
  // The address is free again: a pod whose written status holds it gets it.
  await provider.createPod({ ...samplePod("b"), status: { podIP: ipOfA } }, options);
  assert.equal((await provider.getPod("default", "b", options))!.status!.podIP, ipOfA);
  const again = await provider.deletePod(samplePod("a"), options).catch((e) => e);
  assert.ok(isNotFound(again));
});

Deno.test("creating a pod it already runs does not make a second instance", async () => {
  const { provider, options, notified } = mockProvider();
  await provider.createPod(samplePod(), options);
  await provider.createPod(samplePod(), options);
  assert.equal((await provider.listPods(options)).length, 1);
  assert.equal(notified.length, 1);
  // Same name, new uid: the old pod is replaced.
  const replacement = samplePod();
  replacement.metadata = { ...replacement.metadata, uid: "uid-2" };
  await provider.createPod(replacement, options);
  const pods = await provider.listPods(options);
  assert.deepEqual(pods.map((p) => p.metadata?.uid), ["uid-2"]);
});

Deno.test("returned pods are copies the caller cannot use to change the mock", async () => {
  const { provider, options } = mockProvider();
  await provider.createPod(samplePod(), options);
  const pod = await provider.getPod("default", "web", options);
  pod!.metadata!.name = "changed";
  assert.ok(await provider.getPod("default", "web", options));
});

Deno.test("listPods and getPodStatus report only this node's pods", async () => {
  const { provider, options } = mockProvider();
  const other = samplePod("elsewhere", { nodeName: "vk-other" });
  const err = await provider.createPod(other, options).catch((e) => e);
  assert.ok(isInvalidInput(err));
  await provider.createPod(samplePod(), options);
  assert.deepEqual((await provider.listPods(options)).map((p) => p.metadata?.name), ["web"]);
  assert.equal((await provider.getPodStatus("default", "web", options))?.phase, "Running");
  assert.equal(await provider.getPodStatus("default", "elsewhere", options), undefined);
});

Deno.test("a new image restarts the container with a new ID", async () => {
  const { provider, options, clock } = mockProvider();
  const pod = samplePod();
  await provider.createPod(pod, options);
  const before = (await provider.getPod("default", "web", options))!.status!.containerStatuses![0];
  await clock.advance(2000);
  // A new version of the pod, as the core passes one: the mock keeps (and freezes) the one given.
  const updated = structuredClone(pod);
  updated.spec!.containers[0].image = "nginx:1.28";
  await provider.updatePod(updated, options);
  const after = (await provider.getPod("default", "web", options))!.status!.containerStatuses![0];
  assert.equal(after.restartCount, 1);
  assert.equal(after.image, "nginx:1.28");
  assert.notEqual(after.containerID, before.containerID);
});

Deno.test("annotations make createPod fail permanently or transiently", async () => {
  const { provider, options } = mockProvider();
  const failing = (kind: string) => {
    const pod = samplePod(`fail-${kind}`);
    pod.metadata!.annotations = { [ANNOTATIONS.createError]: kind };
    return provider.createPod(pod, options).catch((e) => e);
  };
  assert.ok(isInvalidInput(await failing("invalid")));
  assert.ok(isTransient(await failing("transient")));
  assert.deepEqual(await provider.listPods(options), []);
});

Deno.test("configureNode fills capacity, addresses, labels, taints, providerID and port", () => {
  const { provider } = mockProvider({
    capacity: { "nvidia.com/gpu": "2" },
    labels: { zone: "a" },
    taints: [{ key: "example.com/gpu", effect: "NoSchedule" }],
    providerID: "mock://vk-test",
  });
  const node: Node = {
    metadata: { name: "vk-test", labels: { type: "virtual-kubelet" } },
    spec: { taints: [{ key: "virtual-kubelet.io/provider", value: "mock", effect: "NoSchedule" }] },
  };
  provider.configureNode(node);
  assert.equal(node.status?.capacity?.["nvidia.com/gpu"], "2");
  assert.equal(node.status?.allocatable?.pods, "10000");
  assert.deepEqual(node.status?.addresses, [
    { type: "InternalIP", address: "127.0.0.1" },
    { type: "Hostname", address: "vk-test" },
  ]);
  assert.deepEqual(node.metadata?.labels, { type: "virtual-kubelet", zone: "a" });
  assert.deepEqual(node.spec?.taints?.map((t) => t.key), [
    "virtual-kubelet.io/provider",
    "example.com/gpu",
  ]);
  assert.equal(node.spec?.providerID, "mock://vk-test");
  assert.equal(node.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250);
});

Deno.test("ping fails while a test says so", async () => {
  const { provider, options } = mockProvider();
  await provider.ping(options);
  provider.setPingError(new Error("backend down"));
  await assert.rejects(provider.ping(options), /backend down/);
  provider.setPingError(undefined);
  await provider.ping(options);
});

Deno.test("a pod handed over again after a restart keeps its IP, startTime and startedAt", async () => {
  const first = mockProvider();
  const pod = {
    ...samplePod("kept"),
    metadata: { ...samplePod("kept").metadata, uid: crypto.randomUUID() },
  };
  await first.provider.createPod(pod, first.options);
  const before = (await first.provider.getPod("default", "kept", first.options))!.status!;
  // A new mock (vkubelet restarted) an hour later, handed the pod with the status written before.
  const second = mockProvider();
  await second.clock.advance(3_600_000);
  const { podIP: _ip, ...withoutIp } = before;
  await second.provider.createPod({ ...pod, status: withoutIp }, second.options);
  const after = (await second.provider.getPod("default", "kept", second.options))!.status!;
  assert.equal(after.podIP, before.podIP, "derived from the UID");
  assert.equal(after.startTime, before.startTime);
  assert.equal(
    after.containerStatuses![0].state?.running?.startedAt,
    before.containerStatuses![0].state?.running?.startedAt,
  );
  assert.equal(after.containerStatuses![0].restartCount, 0);
});
