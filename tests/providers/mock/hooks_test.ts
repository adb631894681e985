import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { isInvalidInput } from "../../../provider/mod.ts";
import { ANNOTATIONS, type MockProvider } from "../../../providers/mock/mod.ts";
import { mockProvider, samplePod } from "./_setup.ts";

/** A pod with the given hook annotations, restartPolicy and (optionally) containers. */
function hooked(
  annotations: Record<string, string>,
  restartPolicy: "Always" | "OnFailure" | "Never",
  containers = [{ name: "app", image: "busybox" }],
): Pod {
  const pod = samplePod("job", { restartPolicy, containers });
  pod.metadata!.annotations = annotations;
  return pod;
}

async function statusOf(provider: MockProvider, name = "job") {
  const pod = await provider.getPod("default", name, {});
  return pod!.status!;
}

const condition = (status: Awaited<ReturnType<typeof statusOf>>, type: string) =>
  status.conditions!.find((c) => c.type === type);

Deno.test("exit hook under restartPolicy Never: terminated with the code, pod Failed", async () => {
  const { provider, clock, notified, options } = mockProvider();
  await provider.createPod(hooked({ [ANNOTATIONS.exit]: "app=3@2s" }, "Never"), options);
  assert.equal((await statusOf(provider)).phase, "Running");
  await clock.advance(1_999);
  assert.equal((await statusOf(provider)).phase, "Running");
  const startedAt = (await statusOf(provider)).containerStatuses![0].state!.running!.startedAt;
  await clock.advance(1);
  const status = await statusOf(provider);
  assert.equal(status.phase, "Failed");
  const [app] = status.containerStatuses!;
  assert.equal(app.ready, false);
  assert.equal(app.restartCount, 0);
  assert.deepEqual(app.state?.terminated, {
    exitCode: 3,
    reason: "Error",
    startedAt,
    finishedAt: new Date(clock.now()).toISOString().replace(".000Z", "Z"),
    containerID: app.containerID,
  });
  assert.equal(condition(status, "Ready")?.status, "False");
  // The reason the kubelet (v1.37, pkg/kubelet/status/generate.go) gives a failed pod.
  assert.equal(condition(status, "Ready")?.reason, "PodFailed");
  assert.equal(notified.at(-1)?.status?.phase, "Failed", "the change is pushed, not only polled");
  // Nothing is left running: no more sleeps, and the pod's status no longer changes.
  assert.equal(clock.pending, 0);
  await clock.advance(600_000);
  assert.deepEqual(await statusOf(provider), status);
  await provider.close();
});

Deno.test("exit 0 under restartPolicy Never completes the pod: Succeeded, reason Completed", async () => {
  const { provider, clock, options } = mockProvider();
  await provider.createPod(hooked({ [ANNOTATIONS.exit]: "app=0" }, "Never"), options);
  await clock.advance(0);
  const status = await statusOf(provider);
  assert.equal(status.phase, "Succeeded");
  assert.equal(status.containerStatuses![0].state?.terminated?.reason, "Completed");
  assert.equal(status.containerStatuses![0].state?.terminated?.exitCode, 0);
  await provider.close();
});

Deno.test("the pod stays Running until every container is done", async () => {
  const { provider, clock, options } = mockProvider();
  const containers = [{ name: "a", image: "busybox" }, { name: "b", image: "busybox" }];
  await provider.createPod(
    hooked({ [ANNOTATIONS.exit]: "a=0@1s, b=1@5s" }, "Never", containers),
    options,
  );
  await clock.advance(1_000);
  let status = await statusOf(provider);
  assert.equal(status.phase, "Running");
  assert.equal(condition(status, "Ready")?.reason, "ContainersNotReady");
  assert.equal(condition(status, "Ready")?.message, "containers with unready status: [a]");
  assert.ok(status.containerStatuses![1].state?.running);
  await clock.advance(4_000);
  status = await statusOf(provider);
  assert.equal(status.phase, "Failed", "one container failed under Never");
  assert.deepEqual(status.containerStatuses!.map((s) => s.state?.terminated?.exitCode), [0, 1]);
  await provider.close();
});

Deno.test("a failing container under OnFailure restarts with a back-off of 10 s doubling to 5 min", async () => {
  const { provider, clock, options } = mockProvider();
  await provider.createPod(hooked({ [ANNOTATIONS.exit]: "app=3@1s" }, "OnFailure"), options);
  // First exit at 1 s: restarted at once, as the kubelet does (no back-off entry yet).
  await clock.advance(1_000);
  let app = (await statusOf(provider)).containerStatuses![0];
  assert.ok(app.state?.running);
  assert.equal(app.restartCount, 1);
  assert.equal(app.lastState?.terminated?.exitCode, 3);
  assert.equal(app.lastState?.terminated?.reason, "Error");
  // Second exit at 2 s: CrashLoopBackOff for 10 s.
  await clock.advance(1_000);
  const status = await statusOf(provider);
  app = status.containerStatuses![0];
  assert.equal(status.phase, "Running");
  assert.equal(app.state?.waiting?.reason, "CrashLoopBackOff");
  assert.equal(
    app.state?.waiting?.message,
    "back-off 10s restarting failed container=app pod=job_default(uid-job)",
  );
  assert.equal(app.restartCount, 1);
  assert.equal(app.ready, false);
  assert.equal(app.lastState?.terminated?.exitCode, 3);
  await clock.advance(9_999);
  assert.equal(
    (await statusOf(provider)).containerStatuses![0].state?.waiting?.reason,
    "CrashLoopBackOff",
  );
  await clock.advance(1);
  app = (await statusOf(provider)).containerStatuses![0];
  assert.ok(app.state?.running, "restarted after 10 s");
  assert.equal(app.restartCount, 2);
  // Then 20 s, 40 s, 80 s, 160 s, and 5 min from there on.
  const backOffs: string[] = [];
  for (let i = 0; i < 6; i++) {
    await clock.advance(1_000); // runs 1 s, exits
    const waiting = (await statusOf(provider)).containerStatuses![0].state?.waiting;
    backOffs.push(waiting!.message!.split(" ")[1]);
    const seconds = Math.min(20 * 2 ** i, 300);
    await clock.advance(seconds * 1000);
  }
  // As Go prints the kubelet's back-off (kuberuntime_manager.go `doBackOff`): 5m0s, not 5m.
  assert.deepEqual(backOffs, ["20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"]);
  assert.equal((await statusOf(provider)).containerStatuses![0].restartCount, 8);
  await provider.close();
});

Deno.test("exit 0 under OnFailure completes; under Always it restarts", async () => {
  const onFailure = mockProvider();
  await onFailure.provider.createPod(
    hooked({ [ANNOTATIONS.exit]: "app=0@1s" }, "OnFailure"),
    onFailure.options,
  );
  await onFailure.clock.advance(1_000);
  assert.equal((await statusOf(onFailure.provider)).phase, "Succeeded");
  await onFailure.provider.close();

  const always = mockProvider();
  await always.provider.createPod(
    hooked({ [ANNOTATIONS.exit]: "app=0@1s" }, "Always"),
    always.options,
  );
  await always.clock.advance(2_000);
  const status = await statusOf(always.provider);
  assert.equal(status.phase, "Running");
  const app = status.containerStatuses![0];
  assert.equal(app.state?.waiting?.reason, "CrashLoopBackOff");
  assert.equal(app.lastState?.terminated?.reason, "Completed");
  await always.provider.close();
});

Deno.test("start-error hook: the container waits in CreateContainerError and the pod is Pending", async () => {
  const { provider, options } = mockProvider();
  await provider.createPod(
    hooked({ [ANNOTATIONS.startError]: 'app=exec: "nginx": executable file not found' }, "Always"),
    options,
  );
  const status = await statusOf(provider);
  assert.equal(status.phase, "Pending");
  const [app] = status.containerStatuses!;
  assert.deepEqual(app.state, {
    waiting: {
      reason: "CreateContainerError",
      message: 'exec: "nginx": executable file not found',
    },
  });
  assert.equal(app.ready, false);
  assert.equal(app.containerID, undefined);
  assert.equal(condition(status, "ContainersReady")?.status, "False");
  await assert.rejects(
    provider.getContainerLogs({ namespace: "default", pod: "job", container: "app" }, {}),
    (err) => isInvalidInput(err) && /is waiting to start: CreateContainerError/.test(String(err)),
  );
  // metrics-server would drop the pod if the container had a start time without usage.
  const metrics = await provider.getMetricsResource(options);
  assert.ok(!metrics.includes('container_start_time_seconds{container="app"'));
  await provider.close();
});

Deno.test("a start-error hook without a message gets one naming the annotation", async () => {
  const { provider, options } = mockProvider();
  await provider.createPod(hooked({ [ANNOTATIONS.startError]: "app" }, "Never"), options);
  const waiting = (await statusOf(provider)).containerStatuses![0].state?.waiting;
  assert.match(waiting!.message!, /mock\.vkubelet\.io\/start-error/);
  await provider.close();
});

Deno.test("malformed hook annotations are refused as invalid input naming the fix", async () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ [ANNOTATIONS.exit]: "app=300" }, /CONTAINER=CODE\[@DELAY\].*"app=300"/],
    [{ [ANNOTATIONS.exit]: "app=1@soon" }, /"app=1@soon"/],
    [{ [ANNOTATIONS.exit]: "web=1" }, /no container "web"/],
    [{ [ANNOTATIONS.startError]: "web" }, /start-error: pod has no container "web"/],
  ];
  for (const [annotations, message] of cases) {
    const { provider, options } = mockProvider();
    await assert.rejects(
      provider.createPod(hooked(annotations, "Never"), options),
      (err) => isInvalidInput(err) && message.test(String(err)),
    );
    assert.equal(provider.pods.size, 0);
  }
});

Deno.test("deleting a pod stops its exit script", async () => {
  const { provider, clock, notified, options } = mockProvider();
  const pod = hooked({ [ANNOTATIONS.exit]: "app=3@5s" }, "Always");
  await provider.createPod(pod, options);
  await provider.deletePod(pod, options);
  const count = notified.length;
  await clock.advance(60_000);
  assert.equal(notified.length, count, "no status after deletion");
  assert.equal(clock.pending, 0);
  await provider.close();
});

Deno.test("a Never pod whose container exits 0 stops its sidecar and ends Succeeded", async () => {
  const { provider, clock, options } = mockProvider();
  const pod = hooked({ [ANNOTATIONS.exit]: "app=0@1s" }, "Never");
  pod.spec!.initContainers = [{ name: "proxy", image: "envoy", restartPolicy: "Always" }];
  await provider.createPod(pod, options);
  assert.equal((await statusOf(provider)).phase, "Running");
  await clock.advance(1_000);
  const status = await statusOf(provider);
  assert.equal(status.phase, "Succeeded");
  const [proxy] = status.initContainerStatuses!;
  assert.equal(proxy.state?.terminated?.exitCode, 0, "the sidecar was stopped");
  assert.equal(proxy.ready, false);
  assert.equal(condition(status, "Ready")?.reason, "PodCompleted");
  assert.equal(clock.pending, 0);
  await provider.close();
});
