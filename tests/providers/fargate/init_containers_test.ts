/**
 * Init containers on Fargate: the task definition runs them in order, each non-essential and to
 * success (`dependsOn: SUCCESS`) before the app containers; their statuses show in
 * `initContainerStatuses`; a failed one fails the pod under Never and restarts its task under
 * OnFailure (the kit's back-off), as the kubelet does. ECS is faked below the backend (moto never
 * runs containers, so no init container there ever exits).
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { taskDefinitionFor } from "../../../providers/fargate/request/task_definition.ts";
import { config, ecsPod, fakeFargate } from "./_fake_ecs.ts";

const signal = new AbortController().signal;

function initPod(restartPolicy: "Always" | "OnFailure" | "Never" = "Always"): Pod {
  const pod = ecsPod(restartPolicy);
  pod.spec!.initContainers = [
    { name: "migrate", image: "img", resources: { requests: { cpu: "2", memory: "4Gi" } } },
    { name: "setup", image: "img" },
  ];
  return pod;
}

Deno.test("init containers run in order, each to success, before the app containers", () => {
  const { input } = taskDefinitionFor(initPod(), config, "n1");
  const defs = input.containerDefinitions!;
  assert.deepEqual(defs.map((d) => d.name), ["migrate", "setup", "main"]);
  assert.deepEqual(defs.map((d) => d.essential), [false, false, true]);
  assert.deepEqual(defs.map((d) => d.dependsOn), [
    undefined,
    [{ containerName: "migrate", condition: "SUCCESS" }],
    [{ containerName: "setup", condition: "SUCCESS" }],
  ]);
  // The largest init container sizes the task when it asks for more than the app containers.
  assert.equal(`${input.cpu}/${input.memory}`, "2048/4096");
});

Deno.test("a sidecar init container is refused, naming the field", () => {
  const pod = initPod();
  pod.spec!.initContainers![1].restartPolicy = "Always";
  assert.throws(
    () => taskDefinitionFor(pod, config, "n1"),
    /spec\.initContainers\[1\]\.restartPolicy: the sidecar setup/,
  );
});

Deno.test("a RUNNING task shows its init containers completed and the pod Running", async () => {
  const { pods, status } = fakeFargate();
  await pods.createPod(initPod(), { signal });
  await pods.poll(signal);
  const s = await status();
  assert.equal(s.phase, "Running");
  assert.deepEqual(
    s.initContainerStatuses?.map((c) => [c.name, c.state?.terminated?.reason, c.ready]),
    [["migrate", "Completed", true], ["setup", "Completed", true]],
  );
  assert.equal(s.containerStatuses?.[0].state?.running !== undefined, true);
});

Deno.test("a PENDING task shows the running init container and the app waiting", async () => {
  const { ecs, pods, status } = fakeFargate();
  await pods.createPod(initPod(), { signal });
  ecs.tasks.set(ecs.current, {
    ...ecs.tasks.get(ecs.current),
    lastStatus: "PENDING",
    containers: [{ name: "migrate", exitCode: 0 }, { name: "setup", lastStatus: "RUNNING" }],
  });
  await pods.poll(signal);
  const s = await status();
  assert.equal(s.phase, "Pending");
  const init = s.initContainerStatuses!;
  assert.equal(init[0].state?.terminated?.exitCode, 0);
  assert.ok(init[1].state?.running, "setup runs");
  assert.equal(s.containerStatuses?.[0].state?.waiting?.reason, "PodInitializing");
});

/** The task stops as ECS stops one whose init container `setup` exited 1. */
function initFails(ecs: ReturnType<typeof fakeFargate>["ecs"]): void {
  ecs.tasks.set(ecs.current, {
    ...ecs.tasks.get(ecs.current),
    lastStatus: "STOPPED",
    desiredStatus: "STOPPED",
    stoppedReason: "Dependency setup did not succeed",
    stoppedAt: new Date(ecs.clock.now()),
    containers: [{ name: "migrate", exitCode: 0 }, { name: "setup", exitCode: 1 }, {
      name: "main",
    }],
  });
}

Deno.test("a failed init container fails the pod under restartPolicy Never", async () => {
  const { ecs, pods, status } = fakeFargate();
  await pods.createPod(initPod("Never"), { signal });
  initFails(ecs);
  await pods.poll(signal);
  const s = await status();
  assert.equal(s.phase, "Failed");
  assert.equal(ecs.started.length, 1, "no second task");
  const init = s.initContainerStatuses!;
  assert.equal(init[0].state?.terminated?.exitCode, 0);
  assert.equal(init[1].state?.terminated?.exitCode, 1);
  assert.equal(init[1].state?.terminated?.reason, "Error");
  assert.match(
    s.containerStatuses?.[0].state?.terminated?.message ?? "",
    /^init container setup failed \(exit code 1\)/,
  );
});

Deno.test("a failed init container restarts the pod's task under OnFailure, with back-off", async () => {
  const { clock, ecs, pods, status } = fakeFargate();
  await pods.createPod(initPod("OnFailure"), { signal });
  initFails(ecs);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 2, "the first restart is immediate");
  initFails(ecs);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 2, "the second waits for the back-off");
  const s = await status();
  assert.notEqual(s.phase, "Failed");
  assert.equal(s.initContainerStatuses?.[1].restartCount, 1);
  await clock.advance(10_000);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 3, "restarted after 10 s");
  await pods.poll(signal);
  assert.deepEqual(
    (await status()).initContainerStatuses?.map((c) => c.state?.terminated?.reason),
    ["Completed", "Completed"],
    "the new task ran them again",
  );
});
