/**
 * The kit's RemotePods adopting a run whose pod network attachment cannot be had again after a
 * vkubelet restart (its namespace lost and its IP taken, or its kept state unreadable): as the
 * kubelet does when a pod's sandbox must be made anew, the run is killed and the pod started
 * again on a new attachment (new IP, new credential), its restarts counted, with a
 * `SandboxChanged` event; a Never pod whose containers ran is killed and ends. Fakes of our own
 * interfaces.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Logger,
  type PodNetworkAttachment,
  type PodNetworkHandle,
  type RemoteBackend,
  type RemoteMakeOptions,
  RemotePods,
  type RemoteRun,
} from "../../provider/mod.ts";
import { FakeClock } from "../../provider/testing/mod.ts";
import type { ContainerStateReport } from "../../provider/pod_status.ts";

const log = { debug() {}, info() {}, warn() {}, warning() {}, error() {} } as Logger;

const pod = (restartPolicy: string): Pod => ({
  metadata: { namespace: "team", name: "job", uid: "uid-1" },
  spec: { restartPolicy, containers: [{ name: "app", image: "busybox" }] },
});

/** A network whose kept attachment of the pod cannot be had again (its IP was taken). */
function lostNetwork(calls: string[]): PodNetworkHandle {
  return {
    attach(p) {
      calls.push(`attach ${p.metadata?.uid}`);
      return Promise.resolve(
        {
          podIP: "127.0.80.9",
          podIPs: ["127.0.80.9"],
          agentCommand: ["vkubelet", "agent", "--server=https://127.0.0.1:10250"],
          agentCredential: "vkt1.uid-1.fresh",
        } satisfies PodNetworkAttachment,
      );
    },
    detach(p) {
      calls.push(`detach ${p.metadata?.uid}`);
      return Promise.resolve();
    },
    reattach(p) {
      calls.push(`reattach ${p.metadata?.uid}`);
      // Named as PodIPUnavailableError is: the attachment cannot be had again.
      const lost = new Error("Pod team/job could not have its IP 127.0.80.7 again: it is taken");
      lost.name = "PodIPUnavailableError";
      return Promise.reject(lost);
    },
  };
}

/** One adopted run of the pod (as a restarted vkubelet finds it), in `state`. */
function backendWith(calls: string[], clock: FakeClock, p: Pod, state: ContainerStateReport) {
  const runs = new Map<string, RemoteRun>();
  runs.set("uid-1", {
    pod: p,
    containers: { app: { state, restartCount: 0 } },
    podIP: "10.9.9.9", // the backend's own address, which the cluster cannot reach
    restarts: 2,
  });
  const made: RemoteMakeOptions[] = [];
  const backend: RemoteBackend = {
    list: () => Promise.resolve([...runs.values()]),
    read: (q) => Promise.resolve(runs.get(q.metadata!.uid!)),
    make(q, _signal, options) {
      calls.push(`make ${q.metadata?.uid} restarts=${options?.restarts}`);
      made.push(options!);
      const running = { running: { startedAtMs: clock.now() } };
      const run = { pod: q, containers: { app: { state: running } }, podIP: "10.9.9.9" };
      runs.set(q.metadata!.uid!, run);
      return Promise.resolve(run);
    },
    remove(q) {
      calls.push(`remove ${q.metadata?.uid}`);
      runs.delete(q.metadata!.uid!);
      return Promise.resolve();
    },
    discard(q) {
      calls.push(`discard ${q.metadata?.uid}`);
      runs.delete(q.metadata!.uid!);
      return Promise.resolve();
    },
  };
  return { backend, made };
}

/** Runs RemotePods over `backend` until adopted and its first poll is done; then stops it. */
async function adoptAndPoll(
  backend: RemoteBackend,
  clock: FakeClock,
  calls: string[],
  events: string[],
  done: (calls: string[]) => boolean,
) {
  const options = {
    backend,
    clock,
    log,
    intervalMs: 1000,
    podNetwork: lostNetwork(calls),
    event: (_p: Pod, type: string, reason: string, message: string) =>
      void events.push(`${type} ${reason}: ${message}`),
  };
  const pods = new RemotePods(options);
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  await pods.listPods({});
  for (let i = 0; i < 50 && !done(calls); i++) await new Promise((r) => setTimeout(r, 0));
  const status = (await pods.getPod("team", "job"))?.status;
  stop.abort();
  await running;
  return status;
}

Deno.test("an adopted pod whose network cannot be restored is killed and started again on a new IP", async () => {
  const calls: string[] = [];
  const events: string[] = [];
  const clock = new FakeClock();
  const p = pod("Always");
  const { backend, made } = backendWith(calls, clock, p, {
    running: { startedAtMs: clock.now() },
  });
  clock.advance(5000);
  const status = await adoptAndPoll(
    backend,
    clock,
    calls,
    events,
    (c) => c.some((x) => x.startsWith("make")),
  );
  assert.deepEqual(calls, [
    "reattach uid-1",
    "detach uid-1", // its kept attachment goes
    "discard uid-1", // the old run is killed first
    "attach uid-1", // a new sandbox: new IP, new credential
    "make uid-1 restarts=3",
  ]);
  assert.equal(made[0].network?.agentCredential, "vkt1.uid-1.fresh", "the new run's agent");
  assert.equal(status?.podIP, "127.0.80.9", "the new IP, not the backend's own");
  assert.deepEqual(status?.podIPs, [{ ip: "127.0.80.9" }]);
  assert.equal(status?.phase, "Running");
  const app = status?.containerStatuses?.[0];
  assert.equal(app?.restartCount, 3);
  assert.equal(app?.lastState?.terminated?.exitCode, 137);
  assert.match(app?.lastState?.terminated?.message ?? "", /could not be restored.*taken/);
  assert.equal(events.length, 1);
  assert.match(
    events[0],
    /^Normal SandboxChanged: Pod sandbox changed, it will be killed and re-created: .*127\.0\.80\.7/,
  );
});

Deno.test("a Never pod whose container ran is killed, not started again, when its network cannot be restored", async () => {
  const calls: string[] = [];
  const events: string[] = [];
  const clock = new FakeClock();
  const { backend } = backendWith(calls, clock, pod("Never"), {
    running: { startedAtMs: clock.now() },
  });
  const status = await adoptAndPoll(
    backend,
    clock,
    calls,
    events,
    (c) => c.includes("discard uid-1"),
  );
  assert.deepEqual(calls, ["reattach uid-1", "detach uid-1", "discard uid-1"]);
  assert.equal(status?.phase, "Failed");
  assert.equal(status?.podIP, undefined, "the backend's unreachable address is reported");
  assert.equal(status?.containerStatuses?.[0].state?.terminated?.exitCode, 137);
  assert.equal(events.length, 1);
  assert.match(events[0], /^Warning SandboxChanged: .*restartPolicy Never/);
});

Deno.test("a Never pod whose containers were never created gets a new sandbox when its network cannot be restored", async () => {
  const calls: string[] = [];
  const events: string[] = [];
  const clock = new FakeClock();
  const p = pod("Never");
  const { backend } = backendWith(calls, clock, p, { waiting: { reason: "ContainerCreating" } });
  // No earlier runs: the kubelet's "never successfully created any containers".
  const list = backend.list;
  backend.list = async (signal) => (await list(signal)).map((r) => ({ ...r, restarts: 0 }));
  const status = await adoptAndPoll(
    backend,
    clock,
    calls,
    events,
    (c) => c.some((x) => x.startsWith("make")),
  );
  assert.deepEqual(calls, [
    "reattach uid-1",
    "detach uid-1",
    "discard uid-1",
    "attach uid-1",
    "make uid-1 restarts=1",
  ]);
  assert.equal(status?.podIP, "127.0.80.9");
  assert.equal(status?.phase, "Running");
  assert.match(events[0], /^Normal SandboxChanged/);
});

/** The pod's status while its new attachment is being made (`attach` held until read). */
async function statusWhileAttaching(p: Pod) {
  const calls: string[] = [];
  const clock = new FakeClock();
  const { backend } = backendWith(calls, clock, p, { running: { startedAtMs: clock.now() } });
  const network = lostNetwork(calls);
  const gate = Promise.withResolvers<void>();
  const pods = new RemotePods({
    backend,
    clock,
    log,
    intervalMs: 1000,
    podNetwork: {
      ...network,
      async attach(q) {
        calls.push("attach waits");
        await gate.promise;
        return await network.attach(q);
      },
    },
  });
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  await pods.listPods({});
  for (let i = 0; i < 50 && !calls.includes("attach waits"); i++) {
    await new Promise((r) => setTimeout(r, 0));
  }
  const status = (await pods.getPod("team", "job"))?.status;
  gate.resolve();
  for (let i = 0; i < 50 && !calls.some((x) => x.startsWith("make")); i++) {
    await new Promise((r) => setTimeout(r, 0));
  }
  stop.abort();
  await running;
  assert.ok(calls.includes("attach waits"), `no new attachment was asked for: ${calls}`);
  return status;
}

Deno.test("a pod waiting for its new sandbox shows its containers as being created, not in back-off", async () => {
  const status = await statusWhileAttaching(pod("Always"));
  const app = status?.containerStatuses?.[0];
  // kubernetes/kubernetes pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses: a container
  // with no status in the pod's (new) sandbox is Waiting with the default reason.
  assert.deepEqual(app?.state, { waiting: { reason: "ContainerCreating" } });
  assert.equal(app?.restartCount, 2, "the new run counts once it is made");
  assert.equal(app?.lastState?.terminated?.exitCode, 137, "the killed run's end is kept");
});

Deno.test("a pod with init containers waiting for its new sandbox shows PodInitializing", async () => {
  const p = pod("Always");
  p.spec!.initContainers = [{ name: "setup", image: "busybox" }];
  const status = await statusWhileAttaching(p);
  assert.deepEqual(status?.containerStatuses?.[0].state, {
    waiting: { reason: "PodInitializing" },
  });
  assert.deepEqual(status?.initContainerStatuses?.[0].state, {
    waiting: { reason: "PodInitializing" },
  });
});
