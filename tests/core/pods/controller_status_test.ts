import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { controllerStatus } from "../../../core/pods/pod_status.ts";
import { buildPodStatus } from "../../../provider/mod.ts";

// The kubelet appends its conditions in this order after those it does not own
// (kubernetes/kubernetes pkg/kubelet/kubelet_pods.go generateAPIPodStatus, the conditions from
// pkg/kubelet/status/generate.go).
const KUBELET_ORDER = [
  "PodReadyToStartContainers",
  "Initialized",
  "Ready",
  "ContainersReady",
  "PodScheduled",
];
const NOW = Date.parse("2026-12-01T10:00:00Z");

function pod(): Pod {
  return {
    metadata: { name: "web-0", namespace: "shop", uid: "u1" },
    spec: {
      initContainers: [
        { name: "setup", image: "busybox" },
        { name: "proxy", image: "envoy", restartPolicy: "Always" },
      ],
      containers: [{ name: "main", image: "nginx" }, { name: "log", image: "busybox" }],
      readinessGates: [{ conditionType: "example.com/gate" }],
    },
    status: {
      phase: "Pending",
      conditions: [
        { type: "PodScheduled", status: "True", lastTransitionTime: "2026-12-01T09:59:00Z" },
        { type: "example.com/gate", status: "False" },
      ],
    },
  };
}

const types = (list: { type?: string }[] | undefined) => (list ?? []).map((c) => c.type);

Deno.test("a held pod's conditions are the kit's: the same five, in the kubelet's order", () => {
  const held = controllerStatus(pod(), {
    phase: "Pending",
    waiting: { container: "main", reason: "CreateContainerConfigError" },
    nowMs: NOW,
  });
  const kit = buildPodStatus(pod(), {
    containers: {
      main: { state: { waiting: { reason: "CreateContainerConfigError" } } },
      log: { state: { waiting: { reason: "ContainerCreating" } } },
    },
    nowMs: NOW,
  });
  assert.deepEqual(held.conditions, kit.conditions);
  // Others' conditions first (the gate's), then the kubelet's five.
  assert.deepEqual(types(held.conditions), ["example.com/gate", ...KUBELET_ORDER]);
  const scheduled = held.conditions?.find((c) => c.type === "PodScheduled");
  assert.equal(scheduled?.lastTransitionTime, "2026-12-01T09:59:00Z", "the scheduler's time");
  const ready = held.conditions?.find((c) => c.type === "Ready");
  assert.equal(ready?.message, "containers with unready status: [proxy main log]");
});

Deno.test("a pod the controller fails has the conditions the kit gives a finished pod", () => {
  const failed = controllerStatus(pod(), {
    phase: "Failed",
    reason: "ProviderFailed",
    message: "no such instance type",
    nowMs: NOW,
  });
  const kit = buildPodStatus(pod(), {
    containers: {
      main: { state: { waiting: { reason: "ContainerCreating" } } },
      log: { state: { waiting: { reason: "ContainerCreating" } } },
    },
    nowMs: NOW,
    sandboxReady: false,
    terminal: true,
  });
  assert.equal(failed.phase, "Failed");
  assert.equal(failed.reason, "ProviderFailed");
  assert.deepEqual(failed.conditions, kit.conditions);
  assert.deepEqual(types(failed.conditions), ["example.com/gate", ...KUBELET_ORDER]);
  assert.equal(failed.conditions?.find((c) => c.type === "Ready")?.reason, "PodFailed");
});
