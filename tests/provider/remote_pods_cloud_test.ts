/**
 * What the kit's RemotePods offers a cloud backend (ECI, ACI) besides the pod calls: init
 * containers reported by the run reach the pod's status (and between runs wait in the back-off,
 * as the containers do), and the provider can address a pod's run now (exec, a metric call) and
 * list the pods that have one (stats).
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import { type RemoteBackend, RemotePods, type RemoteRun } from "../../provider/mod.ts";
import { FakeClock } from "../fakes/clock.ts";

const signal = new AbortController().signal;

function pod(name: string): Pod {
  return {
    metadata: { namespace: "ns", name, uid: `uid-${name}` },
    spec: {
      initContainers: [{ name: "setup", image: "img" }],
      containers: [{ name: "app", image: "img" }],
    },
  };
}

/** One run per uid, its handle a serial; `gone` drops a pod's run as a cloud deletion would. */
class CloudBackend implements RemoteBackend<string> {
  readonly runs = new Map<string, RemoteRun<string>>();
  serial = 0;
  list(): Promise<RemoteRun<string>[]> {
    return Promise.resolve([]);
  }
  read(p: Pod): Promise<RemoteRun<string> | undefined> {
    return Promise.resolve(this.runs.get(p.metadata!.uid!));
  }
  make(p: Pod): Promise<RemoteRun<string>> {
    const run: RemoteRun<string> = {
      pod: p,
      handle: `run-${++this.serial}`,
      initContainers: {
        setup: { state: { terminated: { exitCode: 0, reason: "Completed", finishedAtMs: 0 } } },
      },
      containers: { app: { state: { running: { startedAtMs: 0 } } } },
    };
    this.runs.set(p.metadata!.uid!, run);
    return Promise.resolve(run);
  }
  remove(p: Pod): Promise<void> {
    this.runs.delete(p.metadata!.uid!);
    return Promise.resolve();
  }
}

function setup() {
  const clock = new FakeClock();
  const backend = new CloudBackend();
  const log = getLogger(["test"]);
  const pods = new RemotePods({ backend, clock, log, intervalMs: 1_000, backendRestarts: true });
  return { clock, backend, pods };
}

Deno.test("a run's init containers are in the pod's status", async () => {
  const { pods } = setup();
  await pods.createPod(pod("web"), { signal });
  const got = await pods.getPod("ns", "web");
  const [setupStatus] = got?.status?.initContainerStatuses ?? [];
  assert.equal(setupStatus?.name, "setup");
  assert.equal(setupStatus?.state?.terminated?.reason, "Completed");
  assert.ok(got?.status?.containerStatuses?.[0].state?.running);
});

Deno.test("between runs init containers wait in the back-off and count the runs before", async () => {
  const { backend, pods } = setup();
  await pods.createPod(pod("web"), { signal });
  for (let i = 0; i < 2; i++) {
    backend.runs.delete("uid-web"); // gone twice: made again at once, then after 10 s
    await pods.poll(signal);
  }
  const got = await pods.getPod("ns", "web");
  const [init] = got?.status?.initContainerStatuses ?? [];
  assert.equal(init?.state?.waiting?.reason, "CrashLoopBackOff");
  assert.equal(init?.restartCount, 1, "one run made again so far");
  assert.equal(got?.status?.containerStatuses?.[0].state?.waiting?.reason, "CrashLoopBackOff");
});

Deno.test("runOf and running name the pod's run now, and none between runs or once deleted", async () => {
  const { backend, pods } = setup();
  await pods.createPod(pod("a"), { signal });
  await pods.createPod(pod("b"), { signal });
  assert.equal(pods.runOf("ns", "a")?.handle, "run-1");
  assert.equal(pods.runOf("ns", "missing"), undefined);
  assert.deepEqual(pods.running().map((r) => [r.pod.metadata?.name, r.run.handle]), [
    ["a", "run-1"],
    ["b", "run-2"],
  ]);
  // A run gone behind the kit's back is made again at once (the first restart waits 0 s).
  backend.runs.delete("uid-a");
  await pods.poll(signal);
  assert.equal(pods.runOf("ns", "a")?.handle, "run-3");
  await pods.deletePod(pod("b"), { signal });
  assert.equal(pods.runOf("ns", "b"), undefined);
  assert.deepEqual(pods.running().map((r) => r.run.handle), ["run-3"]);
});
