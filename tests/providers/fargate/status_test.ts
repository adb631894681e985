/**
 * ECS task → per-container reports → pod status, on the provider's own functions: what moto
 * does not model (containers stay PENDING and exit 0 there; no health checks run; tasks never
 * fail to start).
 */
import assert from "node:assert/strict";
import type { Task } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  endOnDelete,
  type PodRecord,
  podStatusOf,
  terminatedOf,
} from "../../../providers/fargate/status.ts";
import { shouldRestartPod } from "../../../provider/mod.ts";

const NOW = Date.parse("2026-01-02T03:04:05Z");

function record(
  task: Task | undefined,
  over: Partial<PodRecord> = {},
  spec: Partial<Pod["spec"]> = {},
): PodRecord {
  return {
    pod: {
      metadata: { namespace: "ns", name: "p", uid: "u" },
      spec: {
        containers: [{ name: "app", image: "img" }, { name: "side", image: "img2" }],
        ...spec,
      },
    },
    taskArn: task?.taskArn,
    task,
    restarts: 0,
    lastTerminated: new Map(),
    deleting: false,
    healthChecked: new Set(),
    startTimeMs: Date.parse("2026-01-02T03:00:00Z"),
    previousTaskIds: [],
    ...over,
  };
}

const eni = [{
  type: "ElasticNetworkInterface",
  details: [{ name: "privateIPv4Address", value: "10.0.0.7" }],
}];

function task(
  lastStatus: string,
  containers: Task["containers"] = [],
  extra: Partial<Task> = {},
): Task {
  return {
    taskArn: "arn:aws:ecs:eu-west-1:1:task/c/abc123",
    lastStatus,
    desiredStatus: lastStatus === "STOPPED" ? "STOPPED" : "RUNNING",
    attachments: eni,
    startedAt: new Date("2026-01-02T03:01:00Z"),
    containers,
    ...extra,
  };
}

Deno.test("a RUNNING task is a Running pod with the task's IP, ready without health checks", () => {
  const status = podStatusOf(record(task("RUNNING")), "192.0.2.1", NOW);
  assert.equal(status.phase, "Running");
  assert.equal(status.podIP, "10.0.0.7");
  assert.equal(status.hostIP, "192.0.2.1");
  assert.deepEqual(status.containerStatuses?.map((c) => [c.name, c.ready, !!c.state?.running]), [
    ["app", true, true],
    ["side", true, true],
  ]);
  assert.equal(status.conditions?.find((c) => c.type === "Ready")?.status, "True");
  assert.equal(status.containerStatuses?.[0].containerID, "ecs://abc123/app");
});

Deno.test("with an ECS health check, Ready follows the container's health status", () => {
  const t = task("RUNNING", [
    { name: "app", healthStatus: "UNHEALTHY" },
    { name: "side", healthStatus: "UNKNOWN" },
  ]);
  const status = podStatusOf(record(t, { healthChecked: new Set(["app"]) }), "h", NOW);
  assert.deepEqual(status.containerStatuses?.map((c) => c.ready), [false, true]);
  const ready = status.conditions?.find((c) => c.type === "Ready");
  assert.equal(ready?.status, "False");
  assert.equal(ready?.reason, "ContainersNotReady");
  assert.match(ready?.message ?? "", /\[app\]/);
});

Deno.test("a task still provisioning is Pending with ContainerCreating", () => {
  const status = podStatusOf(record(task("PROVISIONING", [], { attachments: [] })), "h", NOW);
  assert.equal(status.phase, "Pending");
  assert.equal(status.containerStatuses?.[0].state?.waiting?.reason, "ContainerCreating");
  assert.equal(status.podIP, undefined);
});

Deno.test("a stopped task: exit codes, reasons and the restart policy decide the phase", () => {
  const stopped = task("STOPPED", [
    { name: "app", exitCode: 2, reason: "OutOfMemoryError: container killed" },
    { name: "side", exitCode: 0 },
  ], { stoppedReason: "Essential container in task exited", stoppedAt: new Date(NOW) });
  const app = terminatedOf(stopped, "app", NOW);
  assert.equal(app.exitCode, 2);
  assert.equal(app.reason, undefined, "the builder's default: Error for a non-zero exit");
  assert.equal(
    app.message,
    "OutOfMemoryError: container killed; Essential container in task exited",
  );
  assert.equal(terminatedOf(stopped, "side", NOW).exitCode, 0);
  assert.equal(app.finishedAtMs, NOW);
  const finished = (policy: "Never" | "OnFailure") => {
    const r = record(stopped, {}, { restartPolicy: policy });
    r.finished = new Map(["app", "side"].map((n) => [n, terminatedOf(stopped, n, NOW)]));
    return podStatusOf(r, "h", NOW);
  };
  assert.equal(finished("Never").phase, "Failed");
  assert.deepEqual(
    finished("Never").containerStatuses?.map((c) => c.state?.terminated?.reason),
    ["Error", "Completed"],
  );
  assert.equal(
    finished("Never").conditions?.find((c) => c.type === "Ready")?.reason,
    "PodFailed",
  );
  // The restart decision on these ends, as the supervisor takes it (the kit's rule).
  const codes = [app, terminatedOf(stopped, "side", NOW)].map((e) => e.exitCode);
  assert.equal(shouldRestartPod(record(stopped).pod, codes), true, "Always restarts");
  const onFailure = record(stopped, {}, { restartPolicy: "OnFailure" }).pod;
  assert.equal(shouldRestartPod(onFailure, codes), true);
  assert.equal(shouldRestartPod(record(stopped, {}, { restartPolicy: "Never" }).pod, codes), false);
  assert.equal(shouldRestartPod(onFailure, [codes[1]]), false);
});

Deno.test("a task that never started a container ends with StartError and exit code 128", () => {
  const t = task("STOPPED", [{ name: "app", reason: "CannotPullContainerError: not found" }], {
    stopCode: "TaskFailedToStart",
    stoppedReason: "Task failed to start",
  });
  const ended = terminatedOf(t, "app", NOW);
  assert.equal(ended.exitCode, 128);
  assert.equal(ended.reason, "StartError");
  assert.match(ended.message ?? "", /CannotPullContainerError/);
});

Deno.test("between tasks, a restarting pod shows CrashLoopBackOff and the last end", () => {
  const last = terminatedOf(task("STOPPED", [{ name: "app", exitCode: 1 }]), "app", NOW);
  const r = record(undefined, {
    restarts: 2,
    restartAt: NOW + 20_000,
    lastTerminated: new Map([["app", last], ["side", last]]),
  });
  const status = podStatusOf(r, "h", NOW);
  assert.equal(status.phase, "Running", "restartPolicy Always keeps the pod Running");
  const app = status.containerStatuses![0];
  assert.equal(app.state?.waiting?.reason, "CrashLoopBackOff");
  assert.match(app.state?.waiting?.message ?? "", /back-off 20s/);
  assert.equal(app.restartCount, 2);
  assert.equal(app.lastState?.terminated?.exitCode, 1);
});

Deno.test("transition times stay put while a condition keeps its status", () => {
  const r = record(task("RUNNING"));
  const first = podStatusOf(r, "h", NOW);
  (r.pod as { status?: unknown }).status = first;
  const later = podStatusOf(r, "h", NOW + 60_000);
  assert.deepEqual(later.conditions, first.conditions);
});

Deno.test("on delete every container ends terminated, and the pod takes a terminal phase", () => {
  const running = record(task("RUNNING"));
  const end = endOnDelete(running, "app", "the pod was deleted", NOW);
  assert.equal(end.exitCode, 137);
  assert.match(end.message ?? "", /StopTask: the pod was deleted/);
  running.finished = new Map(["app", "side"].map((n) => [n, endOnDelete(running, n, "x", NOW)]));
  assert.equal(podStatusOf(running, "h", NOW, true).phase, "Failed");
  assert.equal(podStatusOf(running, "h", NOW, false).phase, "Running", "Always, not deleted");
  const last = terminatedOf(task("STOPPED", [{ name: "app", exitCode: 0 }]), "app", NOW);
  const between = record(undefined, {
    restartAt: NOW + 1,
    lastTerminated: new Map([["app", last]]),
  });
  assert.equal(endOnDelete(between, "app", "x", NOW), last, "between tasks the last end stands");
});
