/**
 * The kit's RemotePods deletes without holding the caller: deletePod starts the backend's removal
 * and returns, the pod stays in getPod until the backend is done, then its terminal status is
 * pushed and it is forgotten; a failed removal is tried again from the poll and reported by the
 * next deletePod; a new pod of the same name waits for the old one's removal.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type Logger, type RemoteBackend, RemotePods, type RemoteRun } from "../../provider/mod.ts";
import { FakeClock, flush } from "../fakes/clock.ts";

function pod(name: string, uid = `uid-${name}`): Pod {
  return {
    metadata: { namespace: "ns", name, uid },
    spec: { restartPolicy: "Always", containers: [{ name: "app", image: "img" }] },
  };
}

/** Runs by uid; each remove waits until the test settles it (as Zun waits for its 404). */
class SlowBackend implements RemoteBackend {
  readonly runs = new Map<string, Pod>();
  readonly calls: string[] = [];
  readonly #pending: { resolve: () => void; reject: (err: Error) => void }[] = [];
  /** The signals the removals were given. */
  readonly signals: (AbortSignal | undefined)[] = [];
  constructor(readonly clock: FakeClock) {}
  list(): Promise<RemoteRun[]> {
    return Promise.resolve([...this.runs.values()].map((p) => this.#run(p)));
  }
  read(p: Pod): Promise<RemoteRun | undefined> {
    const run = this.runs.get(p.metadata!.uid!);
    return Promise.resolve(run && this.#run(run));
  }
  make(p: Pod): Promise<void> {
    this.calls.push(`make ${p.metadata!.uid}`);
    this.runs.set(p.metadata!.uid!, p);
    return Promise.resolve();
  }
  remove(p: Pod, signal?: AbortSignal): Promise<void> {
    this.calls.push(`remove ${p.metadata!.uid}`);
    this.signals.push(signal);
    return new Promise((resolve, reject) => {
      this.#pending.push({
        resolve: () => resolve(void this.runs.delete(p.metadata!.uid!)),
        reject,
      });
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  }
  /** Ends the oldest removal under way: done, or failed with `err`. */
  settle(err?: Error): void {
    const next = this.#pending.shift();
    assert.ok(next, "no removal is under way");
    if (err) next.reject(err);
    else next.resolve();
  }
  get removing(): number {
    return this.#pending.length;
  }
  #run(p: Pod): RemoteRun {
    return { pod: p, containers: { app: { state: { running: { startedAtMs: 0 } } } } };
  }
}

function setup() {
  const clock = new FakeClock();
  const backend = new SlowBackend(clock);
  const warnings: string[] = [];
  const log: Logger = {
    debug() {},
    info() {},
    warn() {},
    warning: (message: string) => void warnings.push(message),
    error() {},
  };
  const pods = new RemotePods({ backend, clock, log, intervalMs: 1_000 });
  const pushed: Pod[] = [];
  pods.notifyPods((p) => pushed.push(p));
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  const close = async () => {
    stop.abort();
    await running;
  };
  return { clock, backend, pods, pushed, warnings, stop, close };
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };

const phaseOf = (p: Pod | undefined) => p?.status?.phase;

Deno.test("deletePod returns while the backend still removes the run; the pod stays until it is done", async () => {
  const { backend, pods, pushed, close } = setup();
  const p = pod("web");
  await pods.createPod(p, {});
  await pods.deletePod(p, {});
  assert.equal(backend.removing, 1, "deletePod waited for the backend's removal");
  await flush();
  assert.equal(phaseOf(await pods.getPod("ns", "web")), "Running", "the pod left getPod early");
  assert.ok(!pushed.some((s) => s.status?.phase === "Failed" || s.status?.phase === "Succeeded"));

  backend.settle();
  await flush();
  assert.ok(["Succeeded", "Failed"].includes(phaseOf(pushed.at(-1))!), "no terminal status");
  assert.equal(pushed.at(-1)?.status?.containerStatuses?.[0].state?.running, undefined);
  assert.equal(await pods.getPod("ns", "web"), undefined);
  assert.deepEqual(await pods.listPods({}), []);
  await close();
});

Deno.test("a second deletePod while the removal is under way starts no other", async () => {
  const { backend, pods, close } = setup();
  const p = pod("web");
  await pods.createPod(p, {});
  await pods.deletePod(p, {});
  await pods.deletePod(p, {});
  assert.deepEqual(backend.calls, ["make uid-web", "remove uid-web"]);
  backend.settle();
  await flush();
  await close();
});

Deno.test("the removal outlives the deletePod call's signal and stops with the kit's", async () => {
  const { backend, pods, close } = setup();
  const p = pod("web");
  await pods.createPod(p, {});
  const call = new AbortController();
  await pods.deletePod(p, { signal: call.signal });
  call.abort();
  await flush();
  assert.equal(backend.removing, 1, "the removal stopped with the call");
  assert.notEqual(backend.signals[0], call.signal);
  await close();
  assert.equal(backend.signals[0]?.aborted, true, "run ended with a removal still going");
});

Deno.test("a failed removal is logged and tried again from the next poll, and the next deletePod throws it", async () => {
  const { backend, pods, pushed, warnings, close } = setup();
  const p = pod("web");
  await pods.createPod(p, {});
  await pods.deletePod(p, {});
  backend.settle(new Error("capsule is still Deleting after 300 s"));
  await flush();
  assert.ok(warnings.some((w) => w.includes("cannot remove")), "the failure was not logged");
  assert.equal(phaseOf(await pods.getPod("ns", "web")), "Running", "a failed removal lost it");

  await pods.poll(new AbortController().signal);
  assert.equal(backend.removing, 1, "the poll did not try the removal again");
  backend.settle(new Error("zun-api answered 503"));
  await flush();

  await assert.rejects(pods.deletePod(p, {}), /zun-api answered 503/);
  assert.equal(backend.removing, 1, "the deletePod that reported the failure tried no more");
  await pods.deletePod(p, {}); // the attempt it started is under way: nothing to report
  backend.settle();
  await flush();
  assert.deepEqual(backend.calls.filter((c) => c.startsWith("remove")).length, 3);
  assert.equal(await pods.getPod("ns", "web"), undefined);
  assert.ok(["Succeeded", "Failed"].includes(phaseOf(pushed.at(-1))!));
  await close();
});

Deno.test("a new pod of the same name is made only once the old one's removal is done", async () => {
  const { backend, pods, pushed, close } = setup();
  const old = pod("web", "uid-old");
  await pods.createPod(old, {});
  await pods.deletePod(old, {});
  const fresh = pod("web", "uid-new");
  let made = false;
  const creating = pods.createPod(fresh, {}).then(() => made = true);
  await flush();
  assert.equal(made, false, "createPod did not wait for the old pod's removal");
  assert.deepEqual(backend.calls, ["make uid-old", "remove uid-old"]);
  backend.settle();
  await creating;
  assert.deepEqual(backend.calls, ["make uid-old", "remove uid-old", "make uid-new"]);
  const oldEnd = pushed.findLast((s) => s.metadata?.uid === "uid-old");
  assert.ok(["Succeeded", "Failed"].includes(phaseOf(oldEnd)!), "the old pod's end was not sent");
  assert.equal((await pods.getPod("ns", "web"))?.metadata?.uid, "uid-new");
  await close();
});

Deno.test("at most maxRemovals removals run at once; the rest start as those end", async () => {
  const clock = new FakeClock();
  const backend = new SlowBackend(clock);
  const pods = new RemotePods({ backend, clock, log: quiet, intervalMs: 1_000, maxRemovals: 3 });
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  const all = Array.from({ length: 5 }, (_, i) => pod(`web-${i}`));
  for (const p of all) await pods.createPod(p, {});
  for (const p of all) await pods.deletePod(p, {});
  await flush();
  assert.equal(backend.removing, 3, "a removal started beyond the bound");
  backend.settle();
  await flush();
  assert.equal(backend.removing, 3, "a waiting removal did not take the freed turn");
  for (let i = 0; i < 4; i++) {
    backend.settle();
    await flush();
  }
  assert.equal(backend.removing, 0);
  assert.deepEqual(await pods.listPods({}), [], "every pod was removed in the end");
  stop.abort();
  await running;
});
