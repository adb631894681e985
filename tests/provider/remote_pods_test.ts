/**
 * The kit's RemotePods on a fake backend and a fake clock: it adopts the backend's runs before
 * listing, restarts a run that ended on the kubelet's schedule (at once, then 10 s doubling),
 * ends the pod under Never, and pushes a terminal status on deletion.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import {
  type ContainerStateReport,
  type RemoteBackend,
  RemotePods,
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

/** Runs by uid; `exit` ends a run's container with a code. */
class FakeBackend implements RemoteBackend {
  readonly runs = new Map<string, { pod: Pod; state: ContainerStateReport }>();
  /** What a run says besides its container, by uid. */
  readonly extra = new Map<string, Partial<RemoteRun>>();
  made = 0;
  removed = 0;
  /** Errors the next calls to `make` fail with, in turn. */
  readonly makeFails: string[] = [];
  constructor(readonly clock: FakeClock) {}
  list(): Promise<RemoteRun[]> {
    return Promise.resolve([...this.runs.values()].map((r) => this.#run(r)));
  }
  read(p: Pod): Promise<RemoteRun | undefined> {
    const r = this.runs.get(p.metadata!.uid!);
    return Promise.resolve(r && this.#run(r));
  }
  make(p: Pod): Promise<void> {
    this.made++;
    const fails = this.makeFails.shift();
    if (fails) return Promise.reject(new Error(fails));
    this.runs.set(p.metadata!.uid!, {
      pod: p,
      state: { running: { startedAtMs: this.clock.now() } },
    });
    return Promise.resolve();
  }
  remove(p: Pod): Promise<void> {
    if (this.runs.delete(p.metadata!.uid!)) this.removed++;
    return Promise.resolve();
  }
  exit(p: Pod, exitCode: number): void {
    const finishedAtMs = this.clock.now();
    this.runs.get(p.metadata!.uid!)!.state = { terminated: { exitCode, finishedAtMs } };
  }
  #run(r: { pod: Pod; state: ContainerStateReport }): RemoteRun {
    return {
      pod: r.pod,
      containers: { app: { state: r.state } },
      ...this.extra.get(r.pod.metadata!.uid!),
    };
  }
}

function setup() {
  const clock = new FakeClock();
  const backend = new FakeBackend(clock);
  const pods = new RemotePods({ backend, clock, log: getLogger(["test"]), intervalMs: 1_000 });
  const pushed: Pod[] = [];
  pods.notifyPods((p) => pushed.push(p));
  return { clock, backend, pods, pushed };
}

Deno.test("a run that ends is made again at once, then after 10 s, then 20 s", async () => {
  const { clock, backend, pods } = setup();
  const p = pod("web");
  await pods.createPod(p, { signal });
  assert.equal(backend.made, 1);
  const restartsAfter = async (seconds: number) => {
    backend.exit(p, 1);
    await pods.poll(signal);
    for (let s = 0; s < seconds; s++) {
      clock.jump(1_000);
      await pods.poll(signal);
    }
    return backend.made;
  };
  assert.equal(await restartsAfter(0), 2, "the first restart is at once");
  assert.equal(await restartsAfter(9), 2, "the second waits 10 s");
  const waiting = (await pods.getPod("ns", "web"))!.status!.containerStatuses![0];
  assert.equal(waiting.state?.waiting?.reason, "CrashLoopBackOff");
  const { name, namespace, uid } = p.metadata!;
  assert.equal(
    waiting.state?.waiting?.message,
    `back-off 10s restarting failed container=app pod=${name}_${namespace}(${uid})`,
    "the kubelet's message, as process and mock pods give it",
  );
  assert.equal(waiting.lastState?.terminated?.exitCode, 1);
  clock.jump(1_000);
  await pods.poll(signal);
  assert.equal(backend.made, 3);
  assert.equal(await restartsAfter(20), 4, "the third after 20 s");
  const status = (await pods.getPod("ns", "web"))!.status!;
  assert.equal(status.phase, "Running");
  assert.equal(status.containerStatuses![0].restartCount, 3);
  assert.equal(backend.removed, 3, "each ended run is removed before the next is made");
});

Deno.test("a restart the backend refuses is tried again after a doubling back-off, not at every poll, and shown as the kubelet shows it", async () => {
  const { clock, backend, pods } = setup();
  const p = pod("web");
  await pods.createPod(p, { signal });
  const quota = "quota exceeded: 0 vCPUs left";
  backend.makeFails.push(quota, quota, quota);
  backend.exit(p, 1);
  await pods.poll(signal); // the first restart is at once, and refused
  assert.equal(backend.made, 2);
  const app = async () => (await pods.getPod("ns", "web"))!.status!.containerStatuses![0];
  assert.deepEqual((await app()).state, {
    waiting: { reason: "CreateContainerError", message: quota },
  });
  assert.equal((await app()).lastState?.terminated?.exitCode, 1, "the last end is kept");
  const madeAfter = async (ms: number) => {
    for (let waited = 0; waited < ms; waited += 1_000) {
      clock.jump(1_000);
      await pods.poll(signal);
    }
    return backend.made;
  };
  assert.equal(await madeAfter(9_000), 2, "tried again within 10 s");
  assert.equal(await madeAfter(1_000), 3, "not tried again after 10 s");
  assert.equal(await madeAfter(19_000), 3, "the second wait was not doubled");
  assert.equal(await madeAfter(1_000), 4);
  assert.equal(await madeAfter(40_000), 5, "the third try");
  await pods.poll(signal); // the run made is read
  const status = (await pods.getPod("ns", "web"))!.status!;
  assert.equal(status.phase, "Running");
  assert.deepEqual(Object.keys(status.containerStatuses![0].state!), ["running"]);
  assert.equal(status.containerStatuses![0].restartCount, 1, "one restart, however many tries");
});

Deno.test("under restartPolicy Never a run that ends finishes the pod: Failed, nothing made", async () => {
  const { backend, pods, pushed } = setup();
  const p = pod("job", "Never");
  await pods.createPod(p, { signal });
  backend.exit(p, 3);
  await pods.poll(signal);
  assert.equal(backend.made, 1);
  assert.equal(pushed.at(-1)?.status?.phase, "Failed");
  assert.equal(pushed.at(-1)?.status?.containerStatuses?.[0].state?.terminated?.exitCode, 3);
});

Deno.test("a restarted provider adopts the backend's runs before it lists, and makes none twice", async () => {
  const { clock, backend } = setup();
  await backend.make(pod("old"));
  const pods = new RemotePods({ backend, clock, log: getLogger(["test"]), intervalMs: 1_000 });
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  const listed = await pods.listPods({ signal });
  assert.deepEqual(listed.map((p) => p.metadata?.name), ["old"]);
  assert.equal(listed[0].status?.phase, "Running");
  await pods.createPod(pod("old"), { signal });
  assert.equal(backend.made, 1, "the adopted run stands for the pod");
  stop.abort();
  await running;
});

Deno.test("deletePod removes the run and pushes a terminal status, then forgets the pod", async () => {
  const { backend, pods, pushed } = setup();
  const p = pod("web");
  await pods.createPod(p, { signal });
  await pods.deletePod(p, { signal });
  await flush(); // the removal goes on after deletePod returns
  assert.equal(backend.runs.size, 0);
  const last = pushed.at(-1)!;
  assert.ok(["Succeeded", "Failed"].includes(last.status!.phase!));
  assert.equal(last.status?.containerStatuses?.[0].state?.running, undefined);
  assert.equal(await pods.getPod("ns", "web"), undefined);
});

Deno.test("a run that is gone while deletePod still removes it is not made again", async () => {
  const { backend, pods } = setup();
  const p = pod("web");
  await pods.createPod(p, { signal });
  // A backend whose removal takes a while (Zun waits for the capsule to be gone): the run
  // reads as gone before remove resolves.
  let release!: () => void;
  backend.remove = (gone: Pod) => {
    backend.runs.delete(gone.metadata!.uid!);
    return new Promise<void>((resolve) => release = resolve);
  };
  const deleting = pods.deletePod(p, { signal });
  await new Promise((resolve) => setTimeout(resolve, 0)); // deletePod reaches remove
  await pods.poll(signal);
  assert.equal(backend.made, 1, "the pod being deleted was made again");
  release();
  await deleting;
  await flush(); // the removal goes on after deletePod returns
  assert.equal(await pods.getPod("ns", "web"), undefined);
});

Deno.test("a backend that restarts containers itself: only a run that is gone is made again", async () => {
  const clock = new FakeClock();
  const backend = new FakeBackend(clock);
  const pods = new RemotePods({
    backend,
    clock,
    log: getLogger(["test"]),
    intervalMs: 1_000,
    backendRestarts: true,
  });
  const p = pod("web");
  await pods.createPod(p, { signal });
  backend.exit(p, 1); // the backend shows the end until its own restart
  await pods.poll(signal);
  assert.equal(backend.made, 1, "the backend's own restart is left to it");
  await backend.remove(p); // deleted behind vkubelet's back
  await pods.poll(signal);
  assert.equal(backend.made, 2, "a run that is gone is made again, the first time at once");
  const app = (await pods.getPod("ns", "web"))!.status!.containerStatuses![0];
  assert.equal(app.restartCount, 1);
  assert.equal(app.lastState?.terminated?.exitCode, 1, "the end last read is the last state");
});

Deno.test("a read that fails leaves the pod as it was: no restart, and the round goes on", async () => {
  const { backend, pods } = setup();
  const [a, b] = [pod("a"), pod("b")];
  await pods.createPod(a, { signal });
  await pods.createPod(b, { signal });
  const read = backend.read.bind(backend);
  backend.read = (p: Pod) =>
    p === a || p.metadata?.name === "a" ? Promise.reject(new Error("503")) : read(p);
  backend.exit(b, 1);
  await pods.poll(signal);
  assert.equal((await pods.getPod("ns", "a"))!.status!.phase, "Running");
  assert.equal(backend.made, 3, "b, read after a failed, was made again");
});

Deno.test("a run still ending after its containers ended is restarted only once it has ended", async () => {
  const { backend, pods } = setup();
  const p = pod("batch");
  await pods.createPod(p, { signal });
  backend.extra.set(p.metadata!.uid!, { ending: true });
  backend.exit(p, 1);
  await pods.poll(signal);
  assert.equal(backend.made, 1, "not made again while the run is ending");
  const ending = await pods.getPod("ns", "batch");
  assert.equal(ending?.status?.containerStatuses?.[0].state?.terminated?.exitCode, 1);
  assert.equal(ending?.status?.containerStatuses?.[0].restartCount, 0);
  backend.extra.delete(p.metadata!.uid!);
  await pods.poll(signal);
  assert.equal(backend.made, 2, "made again (at once) once the run ended");
});

Deno.test("a run that fails the pod ends it whatever its restart policy, with the pod's reason", async () => {
  const { backend, pods } = setup();
  const p = pod("deadline", "Always");
  await pods.createPod(p, { signal });
  const failsPod = { reason: "DeadlineExceeded", message: "the deadline passed" };
  backend.extra.set(p.metadata!.uid!, { failsPod });
  backend.exit(p, 137);
  for (let i = 0; i < 3; i++) await pods.poll(signal);
  assert.equal(backend.made, 1, "never made again");
  const status = (await pods.getPod("ns", "deadline"))?.status;
  assert.equal(status?.phase, "Failed");
  assert.equal(status?.reason, "DeadlineExceeded");
  assert.equal(status?.message, "the deadline passed");
});
