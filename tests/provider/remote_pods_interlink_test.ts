/**
 * What RemotePods gained for interLink's plugins, on a fake backend and a fake clock: init
 * containers a run reports, a poll that backs off while the batched read fails, a deletion of a
 * pod the kit does not hold handed to the backend, and an ended run let go of before the next is
 * made.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Logger,
  type RemoteBackend,
  RemotePods,
  type RemoteRead,
  type RemoteRun,
} from "../../provider/mod.ts";
import { FakeClock, flush } from "../fakes/clock.ts";

const signal = new AbortController().signal;

function pod(name: string, extra: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: { namespace: "ns", name, uid: `uid-${name}` },
    spec: { containers: [{ name: "app", image: "img" }], ...extra },
  };
}

/** A backend of one job per pod; `calls` says what the kit asked, in order. */
class Jobs implements RemoteBackend {
  readonly calls: string[] = [];
  exitCode?: number;
  failReads = false;
  /** Resolves the discard in progress. */
  releaseDiscard?: () => void;
  slowDiscard = false;

  list() {
    return Promise.resolve([]);
  }
  read(p: Pod) {
    return this.readMany([{ pod: p }]).then(([run]) => run);
  }
  readMany(reads: RemoteRead[]): Promise<(RemoteRun | undefined)[]> {
    this.calls.push("readMany");
    if (this.failReads) return Promise.reject(new Error("the plugin does not answer"));
    return Promise.resolve(reads.map((r) => this.#run(r.pod)));
  }
  make(p: Pod) {
    this.calls.push("make");
    this.exitCode = undefined;
    return Promise.resolve(this.#run(p));
  }
  remove(p: Pod) {
    this.calls.push(`remove ${p.metadata?.name}`);
    return Promise.resolve();
  }
  removeUnknown(p: Pod) {
    this.calls.push(`removeUnknown ${p.metadata?.name}`);
    return Promise.resolve();
  }
  async discard() {
    this.calls.push("discard");
    if (this.slowDiscard) await new Promise<void>((r) => this.releaseDiscard = r);
    this.calls.push("discarded");
  }
  #run(p: Pod): RemoteRun {
    const state = this.exitCode === undefined
      ? { running: { startedAtMs: 0 } }
      : { terminated: { exitCode: this.exitCode, finishedAtMs: 0 } };
    return {
      pod: p,
      containers: { app: { state } },
      initContainers: Object.fromEntries(
        (p.spec?.initContainers ?? []).map((c) => [c.name, {
          state: { terminated: { exitCode: 0, reason: "Completed", finishedAtMs: 0 } },
        }]),
      ),
    };
  }
}

/** A logger that keeps what it was told. */
function keptLog() {
  const lines: { message: string; properties: Record<string, unknown> }[] = [];
  const keep = (message: string, properties: Record<string, unknown> = {}) =>
    void lines.push({ message, properties });
  const log = { debug: keep, info: keep, warning: keep, warn: keep, error: keep } as unknown;
  return { log: log as Logger, lines };
}

Deno.test("init containers a run reports reach the pod's status, with the kit's restarts", async () => {
  const backend = new Jobs();
  const clock = new FakeClock();
  const pods = new RemotePods({ backend, clock, log: keptLog().log, intervalMs: 1_000 });
  await pods.createPod(pod("init", { initContainers: [{ name: "setup", image: "img" }] }), {
    signal,
  });
  backend.exitCode = 1;
  await pods.poll(signal); // ended, restarted at once (the first restart waits 0 s)
  await pods.poll(signal);
  const status = (await pods.getPod("ns", "init"))!.status!;
  const [setup] = status.initContainerStatuses!;
  assert.equal(setup.state?.terminated?.reason, "Completed");
  assert.equal(setup.restartCount, 1, "the init container counts the pod's restarts");
  assert.equal(status.conditions?.find((c) => c.type === "Initialized")?.status, "True");
});

Deno.test("pollBackoff: while the batched read fails the poll waits 2, 4, 8, 8 intervals, then one again", async () => {
  const backend = new Jobs();
  const clock = new FakeClock();
  const { log, lines } = keptLog();
  const stop = new AbortController();
  const pods = new RemotePods({ backend, clock, log, intervalMs: 1_000, pollBackoff: true });
  const running = pods.run(stop.signal);
  await pods.createPod(pod("p"), { signal });
  backend.failReads = true;
  const waits = () =>
    lines.filter((l) => l.message.startsWith("status poll failed")).map((l) => l.properties.next);
  for (let i = 0; i < 30 && waits().length < 4; i++) {
    await clock.advance(1_000);
  }
  assert.deepEqual(waits().slice(0, 4), [2_000, 4_000, 8_000, 8_000]);
  assert.equal((await pods.getPod("ns", "p"))?.status?.phase, "Running", "no pod is lost");
  backend.failReads = false;
  for (let i = 0; i < 10 && !lines.some((l) => l.message === "status poll answers again"); i++) {
    await clock.advance(8_000);
  }
  assert.ok(lines.some((l) => l.message === "status poll answers again"));
  stop.abort();
  await running;
});

Deno.test("without pollBackoff a failed batched read is logged and the poll comes every interval", async () => {
  const backend = new Jobs();
  const { log, lines } = keptLog();
  const pods = new RemotePods({ backend, clock: new FakeClock(), log, intervalMs: 1_000 });
  await pods.createPod(pod("p"), { signal });
  backend.failReads = true;
  await pods.poll(signal); // does not reject
  assert.ok(lines.some((l) => l.message.startsWith("cannot read the backend's pods")));
});

Deno.test("a deletion of a pod the kit does not hold goes to the backend's removeUnknown", async () => {
  const backend = new Jobs();
  const pods = new RemotePods({
    backend,
    clock: new FakeClock(),
    log: keptLog().log,
    intervalMs: 1_000,
  });
  await pods.createPod(pod("held"), { signal });
  await pods.deletePod(pod("held"), { signal });
  await pods.deletePod(pod("earlier"), { signal });
  assert.deepEqual(backend.calls.filter((c) => c.startsWith("remove")), [
    "remove held",
    "removeUnknown earlier",
  ]);
});

Deno.test("an ended run is let go of before the next run is made", async () => {
  const backend = new Jobs();
  const clock = new FakeClock();
  const pods = new RemotePods({ backend, clock, log: keptLog().log, intervalMs: 1_000 });
  await pods.createPod(pod("p"), { signal });
  backend.exitCode = 1;
  backend.slowDiscard = true;
  const polled = pods.poll(signal); // the first restart is due at once
  await flush();
  assert.deepEqual(backend.calls.slice(-2), ["readMany", "discard"], "no make while discarding");
  backend.releaseDiscard!();
  await polled;
  assert.deepEqual(backend.calls.slice(-3), ["discard", "discarded", "make"]);
});
