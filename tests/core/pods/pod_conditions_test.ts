import assert from "node:assert/strict";
import type { Pod, PodCondition } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import { boundPod, startController } from "./_harness.ts";

const GATE = "example.com/gate";
type Harness = ReturnType<typeof startController>;

function condition(t: Harness, key: string, type: string): PodCondition | undefined {
  return t.api.pods.pods.get(key)?.status?.conditions?.find((c) => c.type === type);
}

/** Another writer (a load balancer controller, say) sets the gate's condition. */
function setGate(t: Harness, key: string, status: "True" | "False"): void {
  const pod = t.api.pods.pods.get(key)!;
  const others = (pod.status?.conditions ?? []).filter((c) => c.type !== GATE);
  t.api.pods.put({
    ...pod,
    status: { ...pod.status, conditions: [...others, { type: GATE, status }] },
  });
}

Deno.test("readiness gates: Ready stays False until the gate is True, and follows it", async () => {
  const t = startController(); // the fake provider reports Ready=True and ignores gates
  t.api.pods.put(boundPod("web-0", { readinessGates: [{ conditionType: GATE }] }));
  await t.settle();
  const ready = () => condition(t, "shop/web-0", "Ready");
  assert.deepEqual(
    { ...ready(), lastTransitionTime: undefined, lastProbeTime: undefined },
    {
      type: "Ready",
      status: "False",
      reason: "ReadinessGatesNotReady",
      message: `corresponding condition of pod readiness gate "${GATE}" does not exist.`,
      lastTransitionTime: undefined,
      lastProbeTime: undefined,
    },
  );
  assert.ok(ready()?.lastTransitionTime, "the transition is stamped");
  setGate(t, "shop/web-0", "True");
  await t.settle();
  assert.equal(ready()?.status, "True");
  assert.equal(ready()?.reason, undefined);
  setGate(t, "shop/web-0", "False");
  await t.settle();
  assert.equal(ready()?.status, "False");
  assert.equal(
    ready()?.message,
    `the status of pod readiness gate "${GATE}" is not "True", but False`,
  );
  assert.equal(condition(t, "shop/web-0", GATE)?.status, "False", "the gate is the writer's");
  await t.stop();
});

Deno.test("readiness gates: a provider's own verdict stands while containers are not ready", async () => {
  const t = startController();
  t.api.pods.put(boundPod("web-0", { readinessGates: [{ conditionType: GATE }] }));
  await t.settle();
  setGate(t, "shop/web-0", "True");
  await t.settle();
  t.provider.setStatus("shop/web-0", (s) => ({
    ...s,
    conditions: [
      { type: "ContainersReady", status: "False", reason: "ContainersNotReady", message: "x" },
      { type: "Ready", status: "False", reason: "ContainersNotReady", message: "x" },
    ],
  }));
  await t.settle();
  assert.equal(condition(t, "shop/web-0", "Ready")?.reason, "ContainersNotReady");
  // A provider that applied the gates to the pod it was given: its False is brought up to date
  // once the gate is True and the containers are ready.
  t.provider.setStatus("shop/web-0", (s) => ({
    ...s,
    conditions: [
      { type: "ContainersReady", status: "True" },
      { type: "Ready", status: "False", reason: "ReadinessGatesNotReady", message: "stale" },
    ],
  }));
  await t.settle();
  assert.equal(condition(t, "shop/web-0", "Ready")?.status, "True");
  await t.stop();
});

const summary = (pod: Pod | undefined) =>
  pod?.status?.conditions?.map((c) => [c.type, c.status, c.reason ?? "", c.message ?? ""]);

Deno.test("a pod held by CreateContainerConfigError has the five conditions the kubelet writes", async () => {
  const t = startController();
  const pod = boundPod("cfg-0");
  pod.spec!.containers.push({ name: "side", image: "busybox" });
  pod.spec!.containers[0].env = [
    { name: "A", valueFrom: { configMapKeyRef: { name: "absent", key: "a" } } },
  ];
  t.api.pods.put(pod);
  await t.settle();
  const written = t.api.pods.pods.get("shop/cfg-0");
  // The kubelet's order (pkg/kubelet/kubelet_pods.go generateAPIPodStatus).
  assert.deepEqual(summary(written), [
    ["PodReadyToStartContainers", "True", "", ""],
    ["Initialized", "True", "", ""],
    ["Ready", "False", "ContainersNotReady", "containers with unready status: [main side]"],
    [
      "ContainersReady",
      "False",
      "ContainersNotReady",
      "containers with unready status: [main side]",
    ],
    ["PodScheduled", "True", "", ""],
  ]);
  assert.ok(written?.status?.conditions?.every((c) => c.lastTransitionTime));
  await t.stop();
});

Deno.test("a pod the provider refused (ProviderFailed) has the five conditions the kubelet writes", async () => {
  const t = startController();
  t.provider.createError = () => new InvalidInputError("no such instance type");
  t.api.pods.put(boundPod("bad-0", { initContainers: [{ name: "init", image: "busybox" }] }));
  await t.settle();
  const written = t.api.pods.pods.get("shop/bad-0");
  assert.equal(written?.status?.reason, "ProviderFailed");
  assert.deepEqual(summary(written), [
    ["PodReadyToStartContainers", "False", "PodSandboxNotReady", "pod sandbox is not ready"],
    [
      "Initialized",
      "False",
      "ContainersNotInitialized",
      "containers with incomplete status: [init]",
    ],
    ["Ready", "False", "PodFailed", ""],
    ["ContainersReady", "False", "PodFailed", ""],
    ["PodScheduled", "True", "", ""],
  ]);
  await t.stop();
});

Deno.test("the conditions of a held pod give way to the provider's once it runs the pod", async () => {
  const t = startController(); // the fake provider reports only Ready
  const pod = boundPod("cfg-0");
  pod.spec!.containers[0].env = [
    { name: "A", valueFrom: { configMapKeyRef: { name: "late", key: "a" } } },
  ];
  t.api.pods.put(pod);
  await t.settle();
  assert.equal(t.api.pods.pods.get("shop/cfg-0")?.status?.conditions?.length, 5);
  t.api.configMaps.put({ metadata: { name: "late", namespace: "shop" }, data: { a: "1" } });
  await t.settle(1_000);
  assert.deepEqual(summary(t.api.pods.pods.get("shop/cfg-0")), [
    ["Ready", "True", "", ""],
    ["PodScheduled", "True", "", ""],
  ]);
  await t.stop();
});
