/**
 * What a backend may add to the five calls RemotePods needs, on a fake backend with a handle
 * per run (as a cloud's task ARN) and a fake clock: batched reads, the handle kept and handed
 * back, the restart count given to make and taken back on adoption, a discard that keeps the
 * pod's other resources, events, updates, ends the backend knows, the dedupe of two runs of one
 * pod, a list retried until it answers, and a pod IP kept between runs.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import {
  type ContainerLogOptions,
  type RemoteBackend,
  type RemoteLogRuns,
  type RemoteMakeOptions,
  RemotePods,
  type RemotePodsOptions,
  type RemoteRead,
  type RemoteRun,
} from "../../provider/mod.ts";
import { FakeClock, flush } from "../fakes/clock.ts";

const signal = new AbortController().signal;

function pod(name: string, restartPolicy: "Always" | "Never" = "Always"): Pod {
  return {
    metadata: { namespace: "ns", name, uid: `uid-${name}` },
    spec: { restartPolicy, containers: [{ name: "app", image: "img" }] },
  };
}

/** A run as the fake cloud keeps it: its id is the handle. */
interface Task {
  id: string;
  pod: Pod;
  restarts: number;
  exitCode?: number;
}

/** A cloud of tasks with ids; records every call the kit makes. */
class TaskCloud implements RemoteBackend<string> {
  readonly tasks = new Map<string, Task>();
  readonly calls: string[] = [];
  readonly made: RemoteMakeOptions[] = [];
  readonly endings: [string, boolean][] = [];
  readonly updated: string[] = [];
  serial = 0;
  listFailures = 0;
  removeEnds?: Record<string, { exitCode: number; reason: string; finishedAtMs: number }>;

  list(): Promise<RemoteRun<string>[]> {
    this.calls.push("list");
    if (this.listFailures-- > 0) return Promise.reject(new Error("503 from the cloud"));
    return Promise.resolve([...this.tasks.values()].map((t) => this.#run(t)));
  }
  read(_p: Pod, _signal?: AbortSignal, last?: RemoteRun<string>) {
    this.calls.push(`read ${last?.handle}`);
    const task = last?.handle ? this.tasks.get(last.handle) : undefined;
    return Promise.resolve(task && this.#run(task));
  }
  readMany(reads: RemoteRead<string>[]): Promise<(RemoteRun<string> | undefined)[]> {
    this.calls.push(`readMany ${reads.map((r) => r.run?.handle).join(",")}`);
    return Promise.resolve(reads.map((r) => {
      const task = r.run?.handle ? this.tasks.get(r.run.handle) : undefined;
      return task && this.#run(task);
    }));
  }
  make(p: Pod, _signal?: AbortSignal, options?: RemoteMakeOptions) {
    this.made.push(options!);
    const task = { id: `t${++this.serial}`, pod: p, restarts: options?.restarts ?? 0 };
    this.tasks.set(task.id, task);
    return Promise.resolve(this.#run(task));
  }
  remove(_p: Pod, _signal?: AbortSignal, run?: RemoteRun<string>) {
    this.calls.push(`remove ${run?.handle}`);
    if (run?.handle) this.tasks.delete(run.handle);
    return Promise.resolve(this.removeEnds);
  }
  discard(_p: Pod, run: RemoteRun<string>): Promise<void> {
    this.calls.push(`discard ${run.handle}`);
    this.tasks.delete(run.handle!);
    return Promise.resolve();
  }
  ended(_p: Pod, run: RemoteRun<string> | undefined, restart: boolean): void {
    this.endings.push([run?.handle ?? "", restart]);
  }
  update(p: Pod): Promise<void> {
    this.updated.push(p.metadata?.labels?.v ?? "");
    return Promise.resolve();
  }
  logs(_p: Pod, _c: string, _o: ContainerLogOptions, runs?: RemoteLogRuns<string>) {
    const text = `current=${runs?.current?.handle} previous=${runs?.previous?.handle}`;
    return Promise.resolve(new Response(text).body!);
  }
  exit(id: string, exitCode: number): void {
    this.tasks.get(id)!.exitCode = exitCode;
  }
  #run(t: Task): RemoteRun<string> {
    const state = t.exitCode === undefined
      ? { running: { startedAtMs: 0 } }
      : { terminated: { exitCode: t.exitCode, finishedAtMs: 0 } };
    const up = t.exitCode === undefined;
    return {
      pod: t.pod,
      handle: t.id,
      restarts: t.restarts,
      containers: { app: { state } },
      podIP: up ? "127.0.0.9" : undefined,
      sandboxReady: up,
      createdAtMs: 1_000,
    };
  }
}

function setup(options: Partial<RemotePodsOptions<string>> = {}) {
  const clock = new FakeClock();
  const cloud = new TaskCloud();
  const pods = new RemotePods<string>({
    backend: cloud,
    clock,
    log: getLogger(["test"]),
    intervalMs: 1_000,
    ...options,
  });
  const pushed: Pod[] = [];
  pods.notifyPods((p) => pushed.push(p));
  return { clock, cloud, pods, pushed };
}

const app = async (pods: RemotePods<string>, name = "web") =>
  (await pods.getPod("ns", name))!.status!.containerStatuses![0];

Deno.test("a batched read answers for every pod in one call, with each run's handle", async () => {
  const { cloud, pods } = setup();
  for (const name of ["a", "b", "c"]) await pods.createPod(pod(name), { signal });
  cloud.calls.length = 0;
  await pods.poll(signal);
  assert.deepEqual(cloud.calls, ["readMany t1,t2,t3"]);
  cloud.readMany = () => Promise.reject(new Error("throttled"));
  cloud.exit("t2", 1);
  await pods.poll(signal);
  assert.equal(cloud.serial, 3, "a failed batch says nothing: no restart");
  assert.equal((await app(pods, "b")).state?.running !== undefined, true);
});

Deno.test("make is told the restarts before the run; the ended run is discarded, not removed; logs see both runs", async () => {
  const { cloud, pods } = setup();
  await pods.createPod(pod("web"), { signal });
  cloud.exit("t1", 2);
  await pods.poll(signal);
  assert.deepEqual(cloud.made, [{ restarts: 0 }, { restarts: 1 }]);
  assert.ok(cloud.calls.includes("discard t1"));
  assert.ok(!cloud.calls.some((c) => c.startsWith("remove")), "the pod's resources stay");
  assert.deepEqual(cloud.endings, [["t1", true]]);
  const status = await app(pods);
  assert.equal(status.restartCount, 1);
  assert.equal(status.lastState?.terminated?.exitCode, 2);
  const log = await new Response(
    await pods.getContainerLogs({ namespace: "ns", pod: "web", container: "app" }, {}),
  ).text();
  assert.equal(log, "current=t2 previous=t1", "logs see the run and the one before");
  assert.throws(() => pods.knownPod("ns", "web", "nope"), /pod ns\/web has no container nope/);
  assert.throws(() => pods.knownPod("ns", "gone"), /pod ns\/gone is not on this node/);
  assert.equal(pods.knownPod("ns", "web", "app").metadata?.uid, "uid-web");
});

Deno.test("the ended hook hears a run that finishes the pod under Never", async () => {
  const { cloud, pods, pushed } = setup();
  await pods.createPod(pod("job", "Never"), { signal });
  cloud.exit("t1", 0);
  await pods.poll(signal);
  assert.deepEqual(cloud.endings, [["t1", false]]);
  assert.equal(pushed.at(-1)?.status?.phase, "Succeeded");
});

Deno.test("adoption keeps the later of two runs of one pod, discards the other, and counts on", async () => {
  const { clock, cloud, pods } = setup();
  const p = pod("web");
  cloud.tasks.set("old", { id: "old", pod: p, restarts: 1 });
  cloud.tasks.set("new", { id: "new", pod: p, restarts: 2 });
  cloud.tasks.set("older", { id: "older", pod: p, restarts: 0 });
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  const listed = await pods.listPods({ signal });
  assert.equal(listed.length, 1);
  assert.deepEqual([...cloud.tasks.keys()], ["new"]);
  assert.equal(listed[0].status?.containerStatuses?.[0].restartCount, 2);
  assert.equal(listed[0].status?.startTime, new Date(1_000).toISOString().replace(".000", ""));
  await pods.createPod(p, { signal });
  assert.equal(cloud.serial, 0, "the adopted run stands for the pod");
  cloud.exit("new", 1);
  await clock.advance(1_000);
  await flush();
  assert.deepEqual(cloud.made.at(-1), { restarts: 3 });
  stop.abort();
  await running;
});

Deno.test("update hears an adopted pod handed over, and an update", async () => {
  const { cloud, pods } = setup();
  const p = pod("web");
  cloud.tasks.set("t", { id: "t", pod: p, restarts: 0 });
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  await pods.createPod({ ...p, metadata: { ...p.metadata, labels: { v: "1" } } }, { signal });
  await pods.updatePod({ ...p, metadata: { ...p.metadata, labels: { v: "2" } } }, { signal });
  assert.deepEqual(cloud.updated, ["1", "2"]);
  assert.equal((await pods.getPod("ns", "web"))?.metadata?.labels?.v, "2");
  stop.abort();
  await running;
});

Deno.test("with retryList, a list that fails is tried again and listPods waits for it", async () => {
  const { clock, cloud, pods } = setup({ retryList: true });
  cloud.tasks.set("t", { id: "t", pod: pod("web"), restarts: 0 });
  cloud.listFailures = 1;
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  let listed: Pod[] | undefined;
  const listing = pods.listPods({ signal }).then((l) => listed = l);
  await flush();
  assert.equal(listed, undefined, "listPods waits while the cloud does not answer");
  await clock.advance(1_000);
  await listing;
  assert.deepEqual(listed!.map((p) => p.metadata?.name), ["web"]);
  assert.deepEqual(cloud.calls.filter((c) => c === "list"), ["list", "list"]);
  stop.abort();
  await running;
});

Deno.test("without retryList a failed list adopts nothing (the default, as before)", async () => {
  const { cloud, pods } = setup();
  cloud.tasks.set("t", { id: "t", pod: pod("web"), restarts: 0 });
  cloud.listFailures = 1;
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  assert.deepEqual(await pods.listPods({ signal }), []);
  stop.abort();
  await running;
});

Deno.test("keepPodIP keeps the last IP between runs; the sandbox follows the run", async () => {
  for (const keepPodIP of [true, false]) {
    const { clock, cloud, pods } = setup({ keepPodIP });
    await pods.createPod(pod("web"), { signal });
    cloud.exit("t1", 1);
    await pods.poll(signal); // at once
    cloud.exit("t2", 1);
    await pods.poll(signal); // 10 s back-off: no run
    const status = (await pods.getPod("ns", "web"))!.status!;
    assert.equal(status.podIP, keepPodIP ? "127.0.0.9" : undefined);
    clock.jump(10_000);
    await pods.poll(signal);
    assert.equal((await pods.getPod("ns", "web"))!.status!.podIP, "127.0.0.9");
  }
  const { cloud, pods } = setup({ keepPodIP: true });
  await pods.createPod(pod("job", "Never"), { signal });
  cloud.exit("t1", 1);
  await pods.poll(signal);
  const done = (await pods.getPod("ns", "job"))!.status!;
  assert.equal(done.podIP, "127.0.0.9", "an ended pod keeps its IP");
  const sandbox = done.conditions?.find((c) => c.type === "PodReadyToStartContainers");
  assert.equal(sandbox?.status, "False", "the ended run's sandbox is down");
});

Deno.test("ends the backend reports on removal are the containers' last states", async () => {
  const { clock, cloud, pods, pushed } = setup();
  const p = pod("web");
  await pods.createPod(p, { signal });
  cloud.removeEnds = { app: { exitCode: 143, reason: "Error", finishedAtMs: clock.now() } };
  await pods.deletePod(p, { signal });
  await flush(); // the removal goes on after deletePod returns
  assert.ok(cloud.calls.includes("remove t1"), "remove gets the run's handle");
  const end = pushed.at(-1)!.status!.containerStatuses![0].state?.terminated;
  assert.equal(end?.exitCode, 143);

  const q = pod("q");
  await pods.createPod(q, { signal });
  cloud.exit("t2", 1);
  await pods.poll(signal);
  cloud.exit("t3", 4);
  await pods.poll(signal); // waiting 10 s: between runs
  cloud.removeEnds = {};
  await pods.deletePod(q, { signal });
  await flush(); // the removal goes on after deletePod returns
  const between = pushed.at(-1)!.status!.containerStatuses![0].state?.terminated;
  assert.equal(between?.exitCode, 4, "between runs the last end stands");
});

Deno.test("a pod being deleted is read and restarted no more", async () => {
  const { cloud, pods } = setup();
  const p = pod("web");
  await pods.createPod(p, { signal });
  let release!: () => void;
  cloud.remove = () => new Promise((resolve) => release = () => resolve(undefined));
  const deleting = pods.deletePod(p, { signal });
  cloud.exit("t1", 1);
  await pods.poll(signal);
  assert.equal(cloud.serial, 1, "no run is made for a pod on its way out");
  release();
  await deleting;
  await flush(); // the removal goes on after deletePod returns
});
