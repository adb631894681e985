import assert from "node:assert/strict";
import type { Container, Pod, PodCondition, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  buildPodStatus,
  type ContainerReport,
  type PodStatusReport,
  terminalPodStatus,
} from "../../provider/mod.ts";

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const at = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19) + "Z";

function pod(spec: Partial<NonNullable<Pod["spec"]>> = {}, status?: PodStatus): Pod {
  return {
    metadata: { namespace: "default", name: "p", uid: "uid-p" },
    spec: { containers: [{ name: "app", image: "busybox" }], ...spec },
    ...(status ? { status } : {}),
  };
}

const running = (extra: Partial<ContainerReport> = {}): ContainerReport => ({
  state: { running: { startedAtMs: T0 } },
  containerID: "test://app",
  ...extra,
});
const exited = (exitCode: number): ContainerReport => ({
  state: { terminated: { exitCode, startedAtMs: T0, finishedAtMs: T0 + 1000 } },
  containerID: "test://app",
});
const backOff = (exitCode: number): ContainerReport => ({
  state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 10s" } },
  lastTerminated: { exitCode, startedAtMs: T0, finishedAtMs: T0 + 1000 },
  restartCount: 1,
});

function build(p: Pod, report: Partial<PodStatusReport> = {}): PodStatus {
  return buildPodStatus(p, { containers: {}, nowMs: T0 + 5000, ...report });
}

const condition = (status: PodStatus, type: string) =>
  status.conditions?.find((c) => c.type === type);

Deno.test("phase by restart policy and exit code, as the kubelet's getPhase", () => {
  const table: [string, ContainerReport, string][] = [
    ["Always", exited(0), "Running"],
    ["Always", exited(1), "Running"],
    ["Always", backOff(1), "Running"],
    ["OnFailure", exited(0), "Succeeded"],
    ["OnFailure", exited(1), "Running"],
    ["OnFailure", backOff(1), "Running"],
    ["Never", exited(0), "Succeeded"],
    ["Never", exited(1), "Failed"],
  ];
  for (const [restartPolicy, app, phase] of table) {
    const p = pod({ restartPolicy: restartPolicy as "Always" });
    assert.equal(build(p, { containers: { app } }).phase, phase, `${restartPolicy} ${app.state}`);
  }
  assert.equal(build(pod(), { containers: { app: running() } }).phase, "Running");
});

Deno.test("a container not reported waits in ContainerCreating and the pod is Pending", () => {
  const status = build(pod());
  assert.equal(status.phase, "Pending");
  const [app] = status.containerStatuses!;
  assert.deepEqual(app.state, { waiting: { reason: "ContainerCreating" } });
  assert.equal(app.containerID, undefined);
  assert.equal(app.ready, false);
  assert.equal(app.restartCount, 0);
  assert.equal(app.image, "busybox");
});

Deno.test("a running pod: conditions, times in whole seconds, IPs, start time, QoS", () => {
  const status = build(pod(), {
    containers: { app: running() },
    podIP: "127.80.0.1",
    hostIP: "127.0.0.1",
    startTimeMs: T0,
  });
  assert.equal(status.phase, "Running");
  assert.equal(status.podIP, "127.80.0.1");
  assert.deepEqual(status.podIPs, [{ ip: "127.80.0.1" }]);
  assert.deepEqual(status.hostIPs, [{ ip: "127.0.0.1" }]);
  assert.equal(status.startTime, "2026-01-02T03:04:05Z");
  assert.equal(status.qosClass, "BestEffort");
  const statuses = Object.fromEntries(status.conditions!.map((c) => [c.type, c.status]));
  assert.deepEqual(statuses, {
    PodReadyToStartContainers: "True",
    Initialized: "True",
    Ready: "True",
    ContainersReady: "True",
    PodScheduled: "True",
  });
  for (const c of status.conditions!) assert.equal(c.lastTransitionTime, "2026-01-02T03:04:10Z");
  const [app] = status.containerStatuses!;
  assert.deepEqual(app.state, { running: { startedAt: "2026-01-02T03:04:05Z" } });
  assert.equal(app.ready, true);
  assert.equal(app.started, true);
  assert.equal(app.containerID, "test://app");
});

Deno.test("an unready container makes Ready and ContainersReady False with the kubelet's message", () => {
  const p = pod({
    containers: [{ name: "a", image: "x" }, { name: "b", image: "x" }, { name: "c", image: "x" }],
  });
  const status = build(p, {
    containers: { a: running({ ready: false }), b: running(), c: exited(0) },
  });
  for (const type of ["Ready", "ContainersReady"]) {
    assert.equal(condition(status, type)?.status, "False");
    assert.equal(condition(status, type)?.reason, "ContainersNotReady");
    assert.equal(condition(status, type)?.message, "containers with unready status: [a c]");
  }
});

Deno.test("terminated containers: reason by exit code, last state, reasons of a finished pod", () => {
  const p = pod({ restartPolicy: "Never" });
  const failed = build(p, { containers: { app: exited(3) } });
  assert.deepEqual(failed.containerStatuses![0].state?.terminated, {
    exitCode: 3,
    reason: "Error",
    startedAt: at(T0),
    finishedAt: at(T0 + 1000),
    containerID: "test://app",
  });
  assert.equal(condition(failed, "Ready")?.reason, "PodFailed");
  assert.equal(condition(failed, "PodReadyToStartContainers")?.status, "False");
  const succeeded = build(p, { containers: { app: exited(0) } });
  assert.equal(succeeded.containerStatuses![0].state?.terminated?.reason, "Completed");
  assert.equal(condition(succeeded, "Ready")?.reason, "PodCompleted");
  assert.equal(condition(succeeded, "Initialized")?.reason, "PodCompleted");
  const restarting = build(pod(), { containers: { app: backOff(2) } });
  const [app] = restarting.containerStatuses!;
  assert.equal(app.state?.waiting?.reason, "CrashLoopBackOff");
  assert.equal(app.lastState?.terminated?.exitCode, 2);
  assert.equal(app.restartCount, 1);
  assert.equal(app.containerID, undefined, "no container exists while waiting");
});

const setup: Container = { name: "setup", image: "busybox" };
const proxy: Container = { name: "proxy", image: "envoy", restartPolicy: "Always" };

Deno.test("init containers: running, done, failed under Never and under OnFailure", () => {
  const p = (restartPolicy: "Never" | "OnFailure") =>
    pod({ restartPolicy, initContainers: [setup] });
  const busy = build(p("Never"), { initContainers: { setup: running() } });
  assert.equal(busy.phase, "Pending");
  assert.deepEqual(busy.containerStatuses![0].state, { waiting: { reason: "PodInitializing" } });
  assert.equal(condition(busy, "Initialized")?.status, "False");
  assert.equal(condition(busy, "Initialized")?.reason, "ContainersNotInitialized");
  assert.equal(
    condition(busy, "Initialized")?.message,
    "containers with incomplete status: [setup]",
  );
  const done = build(p("Never"), {
    initContainers: { setup: exited(0) },
    containers: { app: running() },
  });
  assert.equal(done.phase, "Running");
  assert.equal(done.initContainerStatuses![0].ready, true, "a completed init container is ready");
  assert.equal(condition(done, "Initialized")?.status, "True");
  const failed = build(p("Never"), { initContainers: { setup: exited(1) } });
  assert.equal(failed.phase, "Failed");
  assert.equal(failed.initContainerStatuses![0].ready, false);
  const retried = build(p("OnFailure"), { initContainers: { setup: backOff(1) } });
  assert.equal(retried.phase, "Pending");
  assert.equal(condition(retried, "Initialized")?.status, "False");
});

Deno.test("sidecars: Pending until started, then counted for readiness but not for the phase", () => {
  const p = pod({ restartPolicy: "Never", initContainers: [proxy] });
  const starting = build(p, { initContainers: { proxy: running({ started: false }) } });
  assert.equal(starting.phase, "Pending");
  assert.equal(
    condition(starting, "Initialized")?.message,
    "containers with incomplete status: [proxy]",
  );
  const unready = build(p, {
    initContainers: { proxy: running({ ready: false }) },
    containers: { app: running() },
  });
  assert.equal(unready.phase, "Running");
  assert.equal(condition(unready, "Ready")?.message, "containers with unready status: [proxy]");
  const restarting = build(p, {
    initContainers: { proxy: backOff(1) },
    containers: { app: running() },
  });
  assert.equal(restarting.phase, "Running", "a restarting sidecar does not make the pod Pending");
  assert.equal(condition(restarting, "Initialized")?.status, "True");
  const stillRunning = build(p, {
    initContainers: { proxy: running() },
    containers: { app: exited(0) },
  });
  assert.equal(stillRunning.phase, "Running", "a running sidecar keeps the pod Running");
  const done = build(p, { initContainers: { proxy: exited(143) }, containers: { app: exited(0) } });
  assert.equal(done.phase, "Succeeded", "a stopped sidecar's exit code does not count");
});

Deno.test("readiness gates: Ready stays False until every gate's condition is True", () => {
  const gated = (conditions?: PodCondition[]) =>
    pod({ readinessGates: [{ conditionType: "example.com/lb" }] }, conditions && { conditions });
  const report = { containers: { app: running() } };
  const unset = build(gated(), report);
  assert.equal(condition(unset, "ContainersReady")?.status, "True");
  assert.equal(condition(unset, "Ready")?.status, "False");
  assert.equal(condition(unset, "Ready")?.reason, "ReadinessGatesNotReady");
  assert.equal(
    condition(unset, "Ready")?.message,
    'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
  );
  const gate = (status: string) => ({ type: "example.com/lb", status, lastTransitionTime: at(T0) });
  const no = build(gated([gate("False")]), report);
  assert.equal(condition(no, "Ready")?.status, "False");
  assert.equal(
    condition(no, "Ready")?.message,
    'the status of pod readiness gate "example.com/lb" is not "True", but False',
  );
  assert.deepEqual(condition(no, "example.com/lb"), gate("False"), "the gate's owner keeps it");
  const yes = build(gated([gate("True")]), report);
  assert.equal(condition(yes, "Ready")?.status, "True");
  const fromPrevious = build(gated(), { ...report, previous: { conditions: [gate("True")] } });
  assert.equal(condition(fromPrevious, "Ready")?.status, "True");
});

Deno.test("transition times are kept while a condition holds; others' conditions are kept", () => {
  const p = pod();
  const first = build(p, { containers: { app: running() }, nowMs: T0 });
  const foreign = { type: "example.com/Custom", status: "True", lastTransitionTime: at(T0 - 9e5) };
  const scheduled = { type: "PodScheduled", status: "True", lastTransitionTime: at(T0 - 6e4) };
  const previous = {
    ...first,
    conditions: [...first.conditions!.filter((c) => c.type !== "PodScheduled"), scheduled, foreign],
  };
  const later = T0 + 60_000;
  const next = build(p, { containers: { app: running({ ready: false }) }, nowMs: later, previous });
  assert.equal(condition(next, "Initialized")?.lastTransitionTime, at(T0), "unchanged: kept");
  assert.equal(condition(next, "Ready")?.lastTransitionTime, at(later), "changed: now");
  assert.equal(condition(next, "PodScheduled")?.lastTransitionTime, at(T0 - 6e4));
  assert.deepEqual(condition(next, "example.com/Custom"), foreign);
  assert.equal(next.conditions!.filter((c) => c.type === "PodScheduled").length, 1);
  const extra = { type: "vendor.io/Thing", status: "False", reason: "NoThing" };
  const withExtra = build(p, {
    containers: { app: running() },
    extraConditions: [{ ...extra, lastTransitionTime: at(T0) }],
  });
  assert.equal(condition(withExtra, "vendor.io/Thing")?.reason, "NoThing");
});

Deno.test("a terminal phase is kept; a deleted pod with nothing running ends Failed", () => {
  const p = pod({ restartPolicy: "Always" }, { phase: "Succeeded" });
  assert.equal(build(p, { containers: { app: running() } }).phase, "Succeeded");
  const deleted = build(pod(), { containers: {}, terminal: true });
  assert.equal(deleted.phase, "Failed", "a container never started: TerminatePod's Failed");
  const stopping = build(pod(), { containers: { app: running() }, terminal: true });
  assert.equal(stopping.phase, "Running", "still running during the grace period");
  const stopped = build(pod(), { containers: { app: exited(0) }, terminal: true });
  assert.equal(stopped.phase, "Succeeded", "restartPolicy Always does not restart a deleted pod");
});

Deno.test("terminalPodStatus: every running container terminated, Succeeded or Failed", () => {
  const p = pod({ initContainers: [proxy] });
  const current = build(p, {
    initContainers: { proxy: running() },
    containers: { app: running() },
    nowMs: T0,
  });
  const now = T0 + 30_000;
  const done = terminalPodStatus(p, current, { nowMs: now });
  assert.equal(done.phase, "Succeeded");
  for (const s of [...done.containerStatuses!, ...done.initContainerStatuses!]) {
    assert.equal(s.ready, false);
    assert.deepEqual(s.state?.terminated, {
      exitCode: 0,
      reason: "Completed",
      startedAt: at(T0),
      finishedAt: at(now),
      containerID: "test://app",
    });
  }
  for (const type of ["Ready", "ContainersReady"]) {
    assert.equal(condition(done, type)?.reason, "PodCompleted");
  }
  assert.equal(condition(done, "PodReadyToStartContainers")?.status, "False");
  assert.equal(done.podIP, current.podIP);
  const killed = terminalPodStatus(p, current, { nowMs: now, exitCode: 137 });
  assert.equal(killed.phase, "Failed");
  assert.equal(killed.containerStatuses![0].state?.terminated?.reason, "Error");
  const failed = { ...current, phase: "Failed" };
  assert.equal(terminalPodStatus(p, failed, { nowMs: now }).phase, "Failed", "stays Failed");
});
