/**
 * The restart policy over time, on the fargate backend under the kit's RemotePods with a fake of
 * our own ECS calls and a fake clock: what moto cannot show (tasks do not stop on their own
 * there, and back-off takes minutes). A stopped task is replaced at once, then after 10 s,
 * 20 s...; the back-off starts over after a long run; Never ends the pod; adoption keeps the
 * newest of two tasks of a pod.
 */
import assert from "node:assert/strict";
import { ecsPod, fakeFargate } from "./_fake_ecs.ts";

const signal = new AbortController().signal;

Deno.test("a stopped task is replaced at once, then after the kubelet's back-off", async () => {
  const { clock, ecs, events, pods, status } = fakeFargate();
  await pods.createPod(ecsPod(), { signal });
  ecs.exit(ecs.current, 1);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 2, "the first restart is immediate");
  assert.equal((await status()).containerStatuses?.[0].restartCount, 1);
  assert.match(events.at(-1)!, /^Warning TaskStopped: ECS task t1 stopped \(Essential container/);
  assert.match(events.at(-1)!, /; it will be restarted$/);

  ecs.exit(ecs.current, 1);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 2, "the second waits 10 s");
  const waiting = await status();
  assert.equal(waiting.phase, "Running");
  assert.equal(waiting.containerStatuses?.[0].state?.waiting?.reason, "CrashLoopBackOff");
  assert.match(waiting.containerStatuses?.[0].state?.waiting?.message ?? "", /back-off 10s/);
  assert.equal(waiting.containerStatuses?.[0].lastState?.terminated?.exitCode, 1);
  assert.equal(waiting.podIP, "127.0.0.2", "the pod keeps its IP between tasks");
  await clock.advance(9_000);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 2);
  await clock.advance(1_000);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 3, "started after 10 s");
  assert.equal((await status()).containerStatuses?.[0].restartCount, 2);
  assert.deepEqual(
    ecs.tokens,
    ["0", "1", "2"].map((n) => `${ecsPod().metadata?.uid}-${n}`),
    "one client token per run",
  );

  ecs.exit(ecs.current, 0);
  await pods.poll(signal);
  await clock.advance(19_000);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 3, "the third waits 20 s");
  await clock.advance(1_000);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 4);

  // A task that ran for more than 10 minutes starts the back-off over: at once again.
  await clock.advance(11 * 60_000);
  ecs.exit(ecs.current, 1);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 5);
  assert.deepEqual(ecs.stopped, [], "a stopped task is not stopped again");
  assert.deepEqual(ecs.deregistered, [], "the pod keeps its task definition across restarts");
});

Deno.test("restartPolicy Never: a stopped task ends the pod and nothing is started", async () => {
  const { clock, ecs, events, pods, status } = fakeFargate();
  await pods.createPod(ecsPod("Never"), { signal });
  ecs.exit(ecs.current, 3);
  await pods.poll(signal);
  await clock.advance(60_000);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 1);
  const done = await status();
  assert.equal(done.phase, "Failed");
  assert.equal(done.containerStatuses?.[0].state?.terminated?.exitCode, 3);
  assert.equal(events.filter((e) => e.includes("TaskStopped")).length, 1);
  assert.doesNotMatch(events.at(-1)!, /restarted/);
});

Deno.test("a task ECS forgot is a stopped task: the pod restarts, its end a StartError", async () => {
  const { ecs, pods, status } = fakeFargate();
  await pods.createPod(ecsPod(), { signal });
  ecs.tasks.delete(ecs.current);
  await pods.poll(signal);
  assert.equal(ecs.started.length, 2);
  const last = (await status()).containerStatuses?.[0].lastState?.terminated;
  assert.equal(last?.exitCode, 128);
  assert.match(last?.message ?? "", /no longer known to ECS/);
});

Deno.test("adoption keeps the newer of two running tasks of one pod and stops the other", async () => {
  const tags = (restarts: number, node = "n1") => [
    { key: "vkubelet.io/namespace", value: "ns" },
    { key: "vkubelet.io/pod", value: "p" },
    { key: "vkubelet.io/uid", value: "0d7b4a2e-0000-4000-8000-0000000000f1" },
    { key: "vkubelet.io/node", value: node },
    { key: "vkubelet.io/restarts", value: String(restarts) },
  ];
  const { ecs, pods } = fakeFargate();
  const containers = [{ name: "main", image: "img" }];
  const listed = [
    { taskArn: "arn:x:task/c/old", lastStatus: "RUNNING", tags: tags(0), containers },
    { taskArn: "arn:x:task/c/new", lastStatus: "RUNNING", tags: tags(1), containers },
    { taskArn: "arn:x:task/c/done", lastStatus: "STOPPED", tags: tags(2) },
    { taskArn: "arn:x:task/c/theirs", lastStatus: "RUNNING", tags: tags(0, "n2") },
  ];
  for (const t of listed) ecs.tasks.set(t.taskArn, t);
  ecs.listed = listed.map((t) => t.taskArn);
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  const adopted = await pods.listPods({ signal });
  stop.abort();
  await running;
  assert.deepEqual(adopted.map((p) => p.metadata?.name), ["p"]);
  assert.equal(adopted[0].status?.containerStatuses?.[0].restartCount, 1);
  assert.equal(adopted[0].status?.containerStatuses?.[0].containerID, "ecs://new/main");
  assert.deepEqual(ecs.stopped, ["arn:x:task/c/old"]);
  await pods.createPod(ecsPod(), { signal });
  assert.equal(ecs.started.length, 0, "the adopted task stands for the pod");
});
