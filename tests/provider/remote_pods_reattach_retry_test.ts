/**
 * The kit's RemotePods when an adopted pod's reattach fails for a reason that may pass (a relay
 * slow to start, a full disk): the run is kept and the reattach tried again after a back-off,
 * the pod keeping the IP the cluster has for it; a new sandbox's attachment that fails is tried
 * again after a back-off too, not at every poll; and a hostNetwork pod is never attached. Fakes
 * of our own interfaces.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Logger,
  type PodNetworkAttachment,
  type PodNetworkHandle,
  type RemoteBackend,
  RemotePods,
  type RemoteRun,
} from "../../provider/mod.ts";
import { FakeClock } from "../../provider/testing/mod.ts";

const warnings: string[] = [];
const log = {
  debug() {},
  info() {},
  warn() {},
  warning(message: string) {
    warnings.push(message);
  },
  error() {},
} as Logger;

const pod = (spec: Partial<Pod["spec"]> = {}): Pod => ({
  metadata: { namespace: "team", name: "job", uid: "uid-1" },
  spec: { restartPolicy: "Never", containers: [{ name: "app", image: "busybox" }], ...spec },
});

const attachment = (ip: string): PodNetworkAttachment => ({
  podIP: ip,
  podIPs: [ip],
  agentCommand: ["vkubelet", "agent", "--server=https://127.0.0.1:10250"],
  agentCredential: `vkt1.uid-1.${ip}`,
});

/** A backend with one running run of `p` (as a restarted vkubelet finds it). */
function backendWith(calls: string[], clock: FakeClock, p: Pod) {
  const runs = new Map<string, RemoteRun>();
  const running = { running: { startedAtMs: clock.now() } };
  // The backend's own address, which the cluster cannot reach.
  runs.set("uid-1", { pod: p, containers: { app: { state: running } }, podIP: "10.9.9.9" });
  const backend: RemoteBackend = {
    list: () => Promise.resolve([...runs.values()]),
    read: (q) => Promise.resolve(runs.get(q.metadata!.uid!)),
    make(q) {
      calls.push(`make ${q.metadata?.uid}`);
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
  return backend;
}

/** A pod network whose `reattach` and `attach` answer from the given lists, in turn. */
function network(
  calls: string[],
  reattaches: (() => Promise<PodNetworkAttachment | undefined>)[],
  attaches: (() => Promise<PodNetworkAttachment>)[] = [],
): PodNetworkHandle {
  return {
    attach(p) {
      calls.push(`attach ${p.metadata?.uid}`);
      return (attaches.shift() ?? (() => Promise.resolve(attachment("127.0.80.9"))))();
    },
    detach(p) {
      calls.push(`detach ${p.metadata?.uid}`);
      return Promise.resolve();
    },
    reattach(p) {
      calls.push(`reattach ${p.metadata?.uid}`);
      return (reattaches.shift() ?? (() => Promise.resolve(attachment("127.0.80.7"))))();
    },
  };
}

const fail = (message: string, name = "Error") => () => {
  const err = new Error(message);
  err.name = name;
  return Promise.reject(err);
};

/** Adopts the backend's run, hands the pod over as the cluster has it, and returns the kit. */
async function adopted(options: {
  backend: RemoteBackend;
  clock: FakeClock;
  podNetwork: PodNetworkHandle;
  p: Pod;
}) {
  const pods = new RemotePods({
    ...options,
    log,
    intervalMs: 1000,
    backoff: { initialMs: 100, maxMs: 1000 },
  });
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  await pods.listPods({});
  // The core hands the pod over with the status it last wrote.
  await pods.createPod({
    ...options.p,
    status: { podIP: "127.0.80.7", podIPs: [{ ip: "127.0.80.7" }] },
  }, {});
  const stopped = async () => {
    stop.abort();
    await running;
  };
  return { pods, stopped };
}

const count = (calls: string[], prefix: string) => calls.filter((c) => c.startsWith(prefix)).length;

Deno.test("a reattach that fails for a passing reason keeps the run and is tried again after a doubling back-off", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const p = pod();
  const slow = fail("The relay for port 80 did not start listening within 5 s");
  const { pods, stopped } = await adopted({
    backend: backendWith(calls, clock, p),
    clock,
    podNetwork: network(calls, [slow, fail("No space left on device (os error 28)"), slow]),
    p,
  });
  const signal = new AbortController().signal;
  try {
    assert.deepEqual(calls, ["reattach uid-1"], "the run was killed for a passing failure");
    let status = (await pods.getPod("team", "job"))?.status;
    assert.equal(status?.phase, "Running");
    assert.equal(status?.podIP, "127.0.80.7", "the pod's IP, not the backend's own");
    assert.deepEqual(status?.podIPs, [{ ip: "127.0.80.7" }]);

    await pods.poll(signal); // within the back-off: not tried
    assert.equal(count(calls, "reattach"), 1);
    clock.advance(100);
    await pods.poll(signal); // tried, fails again: the back-off doubles
    assert.equal(count(calls, "reattach"), 2);
    clock.advance(100);
    await pods.poll(signal);
    assert.equal(count(calls, "reattach"), 2, "the second wait was not doubled");
    clock.advance(100);
    await pods.poll(signal); // 200 ms since: tried, fails a third time
    assert.equal(count(calls, "reattach"), 3);
    clock.advance(400);
    await pods.poll(signal); // and now it answers
    assert.equal(count(calls, "reattach"), 4);
    assert.ok(!calls.some((c) => /^(discard|detach|attach|make) /.test(c)), `${calls}`);
    status = (await pods.getPod("team", "job"))?.status;
    assert.equal(status?.phase, "Running");
    assert.equal(status?.podIP, "127.0.80.7");
    assert.equal(pods.runOf("team", "job")?.podIP, "10.9.9.9", "the run is the adopted one");
    assert.ok(warnings.some((w) => w.includes("again in {next} ms")));
  } finally {
    await stopped();
  }
});

Deno.test("a reattach retried after a passing failure that finds the attachment lost makes a new sandbox", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const p = pod({ restartPolicy: "Always" });
  const { pods, stopped } = await adopted({
    backend: backendWith(calls, clock, p),
    clock,
    podNetwork: network(calls, [
      fail("nsenter: cannot open /proc/1/ns/net"),
      fail("Pod team/job could not have its IP 127.0.80.7 again", "PodIPUnavailableError"),
    ]),
    p,
  });
  try {
    clock.advance(100);
    await pods.poll(new AbortController().signal);
    assert.deepEqual(calls, [
      "reattach uid-1",
      "reattach uid-1",
      "detach uid-1",
      "discard uid-1",
      "attach uid-1",
      "make uid-1",
    ]);
    assert.equal((await pods.getPod("team", "job"))?.status?.podIP, "127.0.80.9");
  } finally {
    await stopped();
  }
});

Deno.test("an unreadable kept attachment makes a new sandbox, as a lost IP does", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const p = pod({ restartPolicy: "Always" });
  const { pods, stopped } = await adopted({
    backend: backendWith(calls, clock, p),
    clock,
    podNetwork: network(calls, [
      fail("uid-1.json is not a tunnel attachment", "AttachmentStateError"),
    ]),
    p,
  });
  try {
    await pods.poll(new AbortController().signal);
    assert.deepEqual(calls.slice(0, 3), ["reattach uid-1", "detach uid-1", "discard uid-1"]);
    assert.equal((await pods.getPod("team", "job"))?.status?.podIP, "127.0.80.9");
  } finally {
    await stopped();
  }
});

Deno.test("a new sandbox whose attachment fails is attached again after a doubling back-off, not at every poll", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const p = pod({ restartPolicy: "Always" });
  const full = fail("No space left on device (os error 28)");
  const { pods, stopped } = await adopted({
    backend: backendWith(calls, clock, p),
    clock,
    podNetwork: network(
      calls,
      [fail("its IP is taken", "PodIPUnavailableError")],
      [full, full, full],
    ),
    p,
  });
  const signal = new AbortController().signal;
  try {
    for (let i = 0; i < 5; i++) await pods.poll(signal);
    assert.equal(count(calls, "attach"), 1, "attached again at every poll");
    clock.advance(100);
    await pods.poll(signal);
    await pods.poll(signal);
    assert.equal(count(calls, "attach"), 2);
    clock.advance(100);
    await pods.poll(signal);
    assert.equal(count(calls, "attach"), 2, "the second wait was not doubled");
    clock.advance(100);
    await pods.poll(signal);
    assert.equal(count(calls, "attach"), 3);
    const app = (await pods.getPod("team", "job"))?.status?.containerStatuses?.[0];
    assert.deepEqual(app?.state, { waiting: { reason: "ContainerCreating" } });
    clock.advance(400);
    await pods.poll(signal); // the fourth answers: the run is made
    assert.equal(count(calls, "attach"), 4);
    assert.equal(count(calls, "make"), 1);
    assert.equal((await pods.getPod("team", "job"))?.status?.podIP, "127.0.80.9");
  } finally {
    await stopped();
  }
});

Deno.test("a hostNetwork remote pod is not attached to the node's pod network and reports the backend's address", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const p = pod({ hostNetwork: true });
  const backend = backendWith(calls, clock, p);
  // Adopted after a restart: not reattached.
  const { pods, stopped } = await adopted({
    backend,
    clock,
    podNetwork: network(calls, []),
    p,
  });
  try {
    assert.equal(calls.length, 0, `${calls}`);
    assert.equal((await pods.getPod("team", "job"))?.status?.podIP, "10.9.9.9");
    await pods.deletePod(p, {});
    for (let i = 0; i < 20 && !calls.includes("remove uid-1"); i++) {
      await new Promise((r) => setTimeout(r, 0));
    }
    // Made anew: not attached.
    const fresh = { ...pod({ hostNetwork: true }), metadata: { ...p.metadata, uid: "uid-2" } };
    await pods.createPod(fresh, {});
    assert.ok(!calls.some((c) => /attach/.test(c)), `${calls}`);
    assert.equal((await pods.getPod("team", "job"))?.status?.podIP, "10.9.9.9");
  } finally {
    await stopped();
  }
});
