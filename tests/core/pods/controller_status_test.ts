import assert from "node:assert/strict";
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  controllerStatus,
  failForProviderError,
  failLostPod,
  holdDaemonSetPod,
  holdForConfigError,
  holdForInvalidImage,
  holdForProviderError,
  holdForVolumes,
  type StatusContext,
} from "../../../core/pods/controller_status.ts";
import { PodStates } from "../../../core/pods/pod_state.ts";
import { FakeClock } from "../../fakes/clock.ts";
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

/** The entry points' context: a fake clock, the records, and a status queue that notes its keys. */
function statusContext() {
  const queued: string[] = [];
  const ctx: StatusContext = {
    clock: new FakeClock(NOW),
    states: new PodStates(),
    statusQueue: { add: (key) => queued.push(key) },
  };
  const held = () => ctx.states.get("shop/web-0")?.localStatus;
  return { ctx, queued, held };
}

const waitingReasons = (status: PodStatus | undefined) =>
  (status?.containerStatuses ?? []).map((c) => [c.name, c.state?.waiting?.reason]);

Deno.test("each reason the controller holds a pod for gives its own status, kept for the pod and queued", () => {
  const cases: [string, (ctx: StatusContext, p: Pod) => void, Partial<PodStatus>, string[][]][] = [
    ["volumes", holdForVolumes, { phase: "Pending", reason: "" }, [
      ["main", "ContainerCreating"],
      ["log", "ContainerCreating"],
    ]],
    [
      "image",
      (ctx, p) => holdForInvalidImage(ctx, p, { container: "log", message: "bad ref" }),
      { phase: "Pending", reason: "" },
      [["main", "ContainerCreating"], ["log", "InvalidImageName"]],
    ],
    ["config", (ctx, p) => holdForConfigError(ctx, p, {}), { phase: "Pending" }, [
      ["main", "CreateContainerConfigError"],
      ["log", "CreateContainerConfigError"],
    ]],
    [
      "provider, again",
      (ctx, p) => holdForProviderError(ctx, p, "quota"),
      { phase: "Pending", reason: "ProviderFailed", message: "quota" },
      [["main", "ContainerCreating"], ["log", "ContainerCreating"]],
    ],
    [
      "provider, for good",
      (ctx, p) => failForProviderError(ctx, p, "no such instance type"),
      { phase: "Failed", reason: "ProviderFailed", message: "no such instance type" },
      [["main", "ContainerCreating"], ["log", "ContainerCreating"]],
    ],
    [
      "daemonset",
      (ctx, p) => holdDaemonSetPod(ctx, p, "not here"),
      { phase: "Pending", reason: "DaemonSetPodSkipped", message: "not here" },
      [["main", "ContainerCreating"], ["log", "ContainerCreating"]],
    ],
  ];
  for (const [name, enter, want, waiting] of cases) {
    const { ctx, queued, held } = statusContext();
    enter(ctx, pod());
    assert.deepEqual(queued, ["shop/web-0"], name);
    assert.equal(held()?.uid, "u1", name);
    for (const [field, value] of Object.entries(want)) {
      assert.equal(held()?.status[field as keyof PodStatus], value, `${name}: ${field}`);
    }
    assert.deepEqual(waitingReasons(held()?.status), waiting, name);
  }
  const { ctx, held } = statusContext();
  holdForInvalidImage(ctx, pod(), { container: "log", message: "bad ref" });
  const log = held()?.status.containerStatuses?.find((c) => c.name === "log");
  assert.equal(log?.state?.waiting?.message, "bad ref", "the image manager's message");
});

Deno.test("a pod the backend lost is Failed, its containers ended ContainerStatusUnknown with 137", () => {
  const { ctx, queued, held } = statusContext();
  const running = pod();
  running.status!.containerStatuses = [{
    name: "main",
    image: "nginx",
    imageID: "sha256:1",
    ready: true,
    restartCount: 2,
    state: { running: { startedAt: "2026-12-01T09:00:00Z" } },
  }];
  failLostPod(ctx, running);
  assert.deepEqual(queued, ["shop/web-0"]);
  const status = held()?.status;
  assert.equal(status?.phase, "Failed");
  assert.equal(status?.reason, "BackendLostPod");
  const [main, log] = status?.containerStatuses ?? [];
  assert.equal(main.state?.terminated?.reason, "ContainerStatusUnknown");
  assert.equal(main.state?.terminated?.exitCode, 137);
  assert.equal(main.state?.terminated?.startedAt, "2026-12-01T09:00:00Z");
  assert.equal(main.state?.terminated?.finishedAt, "2026-12-01T10:00:00Z");
  assert.equal(main.restartCount, 2);
  assert.equal(main.ready, false);
  assert.equal(log.state?.terminated?.startedAt, undefined, "never ran");
});
