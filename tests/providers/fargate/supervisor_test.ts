/**
 * The restart policy over time, on the supervisor with a fake of our own ECS calls and a fake
 * clock: what moto cannot show (tasks do not stop on their own there, and back-off takes
 * minutes). A stopped task is replaced at once, then after 10 s, 20 s...; the back-off starts
 * over after a long run; Never ends the pod; adoption keeps the newest of two tasks of a pod.
 */
import assert from "node:assert/strict";
import type { Task } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { type PodRecord, podStatusOf } from "../../../providers/fargate/status.ts";
import { TaskSupervisor } from "../../../providers/fargate/supervisor.ts";
import { FakeClock } from "../../fakes/clock.ts";

function setup(restartPolicy: "Always" | "Never", listed: Task[] = []) {
  const clock = new FakeClock();
  const tasks = new Map<string, Task>();
  const started: string[] = [];
  const stopped: string[] = [];
  const records = new Map<string, PodRecord>();
  let serial = 0;
  const supervisor = new TaskSupervisor({
    ecs: {
      describe: (arns: string[]) =>
        Promise.resolve(new Map(arns.flatMap((a) => tasks.has(a) ? [[a, tasks.get(a)!]] : []))),
      listStartedBy: () => Promise.resolve(listed.map((x) => x.taskArn!)),
      stop: (arn: string) => {
        stopped.push(arn);
        return Promise.resolve();
      },
    },
    records,
    nodeName: "n1",
    clock,
    log: getLogger(["test"]),
    intervalMs: 1000,
    event: () => {},
    start: (record) => start(record),
    changed: () => {},
  });
  function start(record: PodRecord): Promise<void> {
    const arn = `arn:aws:ecs:r:1:task/c/t${++serial}`;
    tasks.set(arn, { taskArn: arn, lastStatus: "RUNNING", startedAt: new Date(clock.now()) });
    record.taskArn = arn;
    record.task = tasks.get(arn);
    record.restartAt = undefined;
    started.push(arn);
    return Promise.resolve();
  }
  for (const t of listed) tasks.set(t.taskArn!, t);
  const pod: Pod = {
    metadata: { namespace: "ns", name: "p", uid: "u1" },
    spec: { restartPolicy, containers: [{ name: "main", image: "img" }] },
  };
  const record: PodRecord = {
    pod,
    restarts: 0,
    lastTerminated: new Map(),
    deleting: false,
    healthChecked: new Set(),
    startTimeMs: clock.now(),
    previousTaskIds: [],
  };
  const stopCurrent = (exitCode: number) => {
    const arn = record.taskArn!;
    tasks.set(arn, {
      ...tasks.get(arn),
      lastStatus: "STOPPED",
      stoppedReason: "exited",
      containers: [{ name: "main", exitCode }],
    });
  };
  return { clock, tasks, started, stopped, records, record, supervisor, stopCurrent, start };
}

const signal = new AbortController().signal;

Deno.test("a stopped task is replaced at once, then after the kubelet's back-off", async () => {
  const env = setup("Always");
  env.records.set("ns/p", env.record);
  await env.start(env.record);
  env.stopCurrent(1);
  await env.supervisor.poll(signal);
  assert.equal(env.started.length, 2, "the first restart is immediate");
  assert.equal(env.record.restarts, 1);

  env.stopCurrent(1);
  await env.supervisor.poll(signal);
  assert.equal(env.started.length, 2, "the second waits 10 s");
  const waiting = podStatusOf(env.record, "h", env.clock.now());
  assert.equal(waiting.phase, "Running");
  assert.equal(waiting.containerStatuses?.[0].state?.waiting?.reason, "CrashLoopBackOff");
  assert.equal(waiting.containerStatuses?.[0].lastState?.terminated?.exitCode, 1);
  await env.clock.advance(9_000);
  await env.supervisor.poll(signal);
  assert.equal(env.started.length, 2);
  await env.clock.advance(1_000);
  await env.supervisor.poll(signal);
  assert.equal(env.started.length, 3, "started after 10 s");
  assert.equal(env.record.restarts, 2);

  env.stopCurrent(0);
  await env.supervisor.poll(signal);
  await env.clock.advance(19_000);
  await env.supervisor.poll(signal);
  assert.equal(env.started.length, 3, "the third waits 20 s");
  await env.clock.advance(1_000);
  await env.supervisor.poll(signal);
  assert.equal(env.started.length, 4);

  // A task that ran for more than 10 minutes starts the back-off over: at once again.
  await env.clock.advance(11 * 60_000);
  env.stopCurrent(1);
  await env.supervisor.poll(signal);
  assert.equal(env.started.length, 5);
  assert.equal(env.record.previousTaskIds.length, 4, "every earlier task kept for --previous");
});

Deno.test("restartPolicy Never: a stopped task ends the pod and nothing is started", async () => {
  const env = setup("Never");
  env.records.set("ns/p", env.record);
  await env.start(env.record);
  env.stopCurrent(3);
  await env.supervisor.poll(signal);
  await env.clock.advance(60_000);
  await env.supervisor.poll(signal);
  assert.equal(env.started.length, 1);
  const status = podStatusOf(env.record, "h", env.clock.now());
  assert.equal(status.phase, "Failed");
  assert.equal(status.containerStatuses?.[0].state?.terminated?.exitCode, 3);
});

Deno.test("adoption keeps the newer of two running tasks of one pod and stops the other", async () => {
  const tags = (restarts: number) => [
    { key: "vkubelet.io/namespace", value: "ns" },
    { key: "vkubelet.io/pod", value: "p" },
    { key: "vkubelet.io/uid", value: "u1" },
    { key: "vkubelet.io/node", value: "n1" },
    { key: "vkubelet.io/restarts", value: String(restarts) },
  ];
  const other = [...tags(0).slice(0, 3), { key: "vkubelet.io/node", value: "n2" }];
  const env = setup("Always", [
    { taskArn: "arn:x:task/c/old", lastStatus: "RUNNING", tags: tags(0) },
    { taskArn: "arn:x:task/c/new", lastStatus: "RUNNING", tags: tags(1) },
    { taskArn: "arn:x:task/c/done", lastStatus: "STOPPED", tags: tags(2) },
    { taskArn: "arn:x:task/c/theirs", lastStatus: "RUNNING", tags: other },
  ]);
  const stop = new AbortController();
  const running = env.supervisor.run(stop.signal);
  await env.supervisor.adopted;
  stop.abort();
  await running;
  assert.deepEqual([...env.records.keys()], ["ns/p"]);
  assert.equal(env.records.get("ns/p")?.taskArn, "arn:x:task/c/new");
  assert.equal(env.records.get("ns/p")?.restarts, 1);
  assert.deepEqual(env.stopped, ["arn:x:task/c/old"]);
});
