/**
 * ECS task → per-container reports → pod status, through the fargate backend under the kit's
 * RemotePods (with a fake of our own ECS calls), and the backend's own functions: what moto
 * does not model (containers stay PENDING and exit 0 there; no health checks run; tasks never
 * fail to start).
 */
import assert from "node:assert/strict";
import type { Task } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { endOnDelete, terminatedOf } from "../../../providers/fargate/status.ts";
import { flush } from "../../../base/fake_clock.ts";
import { fakeFargate } from "./_fake_ecs.ts";

const NOW = Date.parse("2026-01-02T03:04:05Z");
const signal = new AbortController().signal;

function pod(spec: Partial<Pod["spec"]> = {}, main: Record<string, unknown> = {}): Pod {
  return {
    metadata: { namespace: "ns", name: "p", uid: "u1" },
    spec: {
      containers: [{ name: "app", image: "img", ...main }, { name: "side", image: "img2" }],
      ...spec,
    },
  };
}

/** The pod created on a fake ECS, its task then changed by `change`, and one poll. */
async function podWithTask(p: Pod, change: Partial<Task> = {}) {
  const env = fakeFargate();
  await env.pods.createPod(p, { signal });
  const arn = env.ecs.current;
  env.ecs.tasks.set(arn, { ...env.ecs.tasks.get(arn), ...change });
  await env.pods.poll(signal);
  return { ...env, arn };
}

function task(lastStatus: string, containers: Task["containers"] = [], extra: Partial<Task> = {}) {
  return {
    taskArn: "arn:aws:ecs:eu-west-1:1:task/c/abc123",
    lastStatus,
    desiredStatus: lastStatus === "STOPPED" ? "STOPPED" : "RUNNING",
    startedAt: new Date("2026-01-02T03:01:00Z"),
    containers,
    ...extra,
  };
}

Deno.test("a RUNNING task is a Running pod with the task's IP, ready without health checks", async () => {
  const { status } = await podWithTask(pod());
  const s = await status();
  assert.equal(s.phase, "Running");
  assert.equal(s.podIP, "127.0.0.1");
  assert.equal(s.hostIP, "127.0.0.1");
  assert.deepEqual(s.containerStatuses?.map((c) => [c.name, c.ready, !!c.state?.running]), [
    ["app", true, true],
    ["side", true, true],
  ]);
  assert.equal(s.conditions?.find((c) => c.type === "Ready")?.status, "True");
  assert.equal(s.containerStatuses?.[0].containerID, "ecs://t1/app");
});

Deno.test("with an ECS health check, Ready follows the container's health status", async () => {
  const probed = pod({}, { livenessProbe: { exec: { command: ["true"] } } });
  const { status } = await podWithTask(probed, {
    containers: [{ name: "app", healthStatus: "UNHEALTHY" }, { name: "side" }],
  });
  const s = await status();
  assert.deepEqual(s.containerStatuses?.map((c) => c.ready), [false, true]);
  const ready = s.conditions?.find((c) => c.type === "Ready");
  assert.equal(ready?.status, "False");
  assert.equal(ready?.reason, "ContainersNotReady");
  assert.match(ready?.message ?? "", /\[app\]/);
});

Deno.test("a task still provisioning is Pending with ContainerCreating", async () => {
  const { ecs, pods, status } = fakeFargate();
  const run = ecs.run.bind(ecs);
  ecs.run = async (def, options) => {
    const started = await run(def, options);
    const provisioning = { ...started, lastStatus: "PROVISIONING", attachments: [] };
    ecs.tasks.set(started.taskArn!, provisioning);
    return provisioning;
  };
  await pods.createPod(pod(), { signal });
  await pods.poll(signal);
  const s = await status();
  assert.equal(s.phase, "Pending");
  assert.equal(s.containerStatuses?.[0].state?.waiting?.reason, "ContainerCreating");
  assert.equal(s.containerStatuses?.[0].state?.waiting?.message, "ECS task is PROVISIONING");
  assert.equal(s.podIP, undefined);
});

Deno.test("a stopped task: exit codes, reasons and the restart policy decide the phase", async () => {
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
  const { taskArn: _, ...ended } = stopped;
  const after = async (restartPolicy: "Never" | "OnFailure" | "Always") => {
    const env = await podWithTask(pod({ restartPolicy }), ended);
    return { status: await env.status(), started: env.ecs.started.length };
  };
  const never = await after("Never");
  assert.equal(never.status.phase, "Failed");
  assert.equal(never.started, 1);
  assert.deepEqual(
    never.status.containerStatuses?.map((c) => c.state?.terminated?.reason),
    ["Error", "Completed"],
  );
  assert.equal(never.status.conditions?.find((c) => c.type === "Ready")?.reason, "PodFailed");
  assert.equal(never.status.podIP, "127.0.0.1", "an ended pod keeps its IP");
  assert.equal((await after("OnFailure")).started, 2, "OnFailure: one container failed");
  assert.equal((await after("Always")).started, 2);
  const succeeded = {
    ...ended,
    containers: [{ name: "app", exitCode: 0 }, { name: "side", exitCode: 0 }],
  };
  const done = await podWithTask(pod({ restartPolicy: "OnFailure" }), succeeded);
  assert.equal((await done.status()).phase, "Succeeded");
  assert.equal(done.ecs.started.length, 1);
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

Deno.test("transition times stay put while a condition keeps its status", async () => {
  const { clock, pods, status } = await podWithTask(pod());
  const first = await status();
  await clock.advance(60_000);
  await pods.poll(signal);
  assert.deepEqual((await status()).conditions, first.conditions);
});

Deno.test("on delete every container ends terminated, and the pod takes a terminal phase", async () => {
  const end = endOnDelete(task("RUNNING"), "app", "the pod was deleted", NOW);
  assert.equal(end.exitCode, 137);
  assert.match(end.message ?? "", /StopTask: the pod was deleted/);

  const { ecs, pods } = await podWithTask(pod());
  const pushed: Pod[] = [];
  pods.notifyPods((p) => pushed.push(p));
  await pods.deletePod(pod(), { signal });
  await flush(); // the kit removes the task after deletePod returns
  const last = pushed.at(-1)!.status!;
  assert.equal(last.phase, "Failed");
  assert.deepEqual(last.containerStatuses?.map((c) => c.state?.terminated?.exitCode), [137, 137]);
  assert.deepEqual(ecs.stopped, ["arn:aws:ecs:r:1:task/c/t1"]);
  assert.deepEqual(ecs.deregistered, ["arn:aws:ecs:r:1:task-definition/vk_ns_p:1"]);

  // Between tasks (back-off) nothing runs: the last end stands, and there is nothing to stop.
  const between = await podWithTask(pod());
  between.ecs.exit(between.ecs.current, 1, "app");
  await between.pods.poll(signal); // restarted at once
  between.ecs.exit(between.ecs.current, 4, "app");
  await between.pods.poll(signal);
  const seen: Pod[] = [];
  between.pods.notifyPods((p) => seen.push(p));
  await between.pods.deletePod(pod(), { signal });
  await flush();
  const app = seen.at(-1)!.status!.containerStatuses![0].state?.terminated;
  assert.equal(app?.exitCode, 4);
  assert.deepEqual(between.ecs.stopped, []);
});
