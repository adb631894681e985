/**
 * The kit's RemotePods with a node pod network (ProviderDeps `podNetwork`): the pod is attached
 * before its run is made, the backend gets the attachment, the pod's IP is the attachment's,
 * restarts keep it, and the pod is detached once forgotten. Fakes of our own interfaces.
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
import { join } from "node:path";
import { POD_NETWORK_LOST_ERRORS } from "../../provider/contract.ts";
import { AttachmentStore } from "../../core/tunnel/attachments.ts";
import { TunnelHost, type TunnelNetwork } from "../../core/tunnel/host.ts";
import {
  PodIPUnavailableError,
  type PodNetworks,
} from "../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../providers/process/network/tunnel_network.ts";
import { ListedServices } from "../../tools/tunnel/server.ts";
import { log as testLog } from "../../tools/harness/kubelet_api_fakes.ts";

const log: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} } as Logger;

/** Records every call in order. */
function fakeNetwork(calls: string[]): PodNetworkHandle {
  return {
    attach(pod) {
      calls.push(`attach ${pod.metadata?.uid}`);
      return Promise.resolve(
        {
          podIP: "198.18.1.7",
          podIPs: ["198.18.1.7"],
          agentCommand: ["vkubelet", "agent", "--server=https://node:10250"],
          agentCredential: "vkt1.secret",
        } satisfies PodNetworkAttachment,
      );
    },
    detach(pod) {
      calls.push(`detach ${pod.metadata?.uid}`);
      return Promise.resolve();
    },
  };
}

function fakeBackend(calls: string[], clock: FakeClock, failMake = false) {
  const runs = new Map<string, RemoteRun>();
  const made: RemoteMakeOptions[] = [];
  const backend: RemoteBackend = {
    list: () => Promise.resolve([...runs.values()]),
    read: (pod) => Promise.resolve(runs.get(pod.metadata!.uid!)),
    make(pod, _signal, options) {
      calls.push(`make ${pod.metadata?.uid}`);
      made.push(options!);
      if (failMake) return Promise.reject(new Error("the backend refused the job"));
      const state = { running: { startedAtMs: clock.now() } };
      // The backend's own address, which the cluster cannot reach.
      runs.set(pod.metadata!.uid!, { pod, containers: { app: { state } }, podIP: "10.9.9.9" });
      return Promise.resolve();
    },
    remove(pod) {
      calls.push(`remove ${pod.metadata?.uid}`);
      runs.delete(pod.metadata!.uid!);
      return Promise.resolve();
    },
  };
  return { backend, runs, made };
}

const pod = (restartPolicy = "Never"): Pod => ({
  metadata: { namespace: "team", name: "job", uid: "uid-1" },
  spec: { restartPolicy, containers: [{ name: "app", image: "busybox" }] },
});

Deno.test("a remote pod is attached before its run is made and reports the attached IP", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const { backend, made } = fakeBackend(calls, clock);
  const stop = new AbortController();
  const pods = new RemotePods({
    backend,
    clock,
    log,
    intervalMs: 1000,
    podNetwork: fakeNetwork(calls),
  });
  const running = pods.run(stop.signal);
  await pods.createPod(pod(), {});
  assert.deepEqual(calls, ["attach uid-1", "make uid-1"]);
  assert.equal(made[0].network?.agentCredential, "vkt1.secret", "the backend gets the agent");
  const status = (await pods.getPod("team", "job"))?.status;
  assert.equal(status?.podIP, "198.18.1.7");
  assert.deepEqual(status?.podIPs, [{ ip: "198.18.1.7" }]);

  await pods.deletePod(pod(), {});
  for (let i = 0; i < 50 && !calls.includes("detach uid-1"); i++) await Promise.resolve();
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(calls, ["attach uid-1", "make uid-1", "remove uid-1", "detach uid-1"]);
  stop.abort();
  await running;
});

Deno.test("a restarted run gets the same attachment, and a failed make detaches", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const { backend, runs, made } = fakeBackend(calls, clock);
  const pods = new RemotePods({
    backend,
    clock,
    log,
    intervalMs: 1000,
    podNetwork: fakeNetwork(calls),
    backoff: { initialMs: 10, maxMs: 10 },
  });
  const signal = new AbortController().signal;
  await pods.createPod(pod("Always"), {});
  const ended = { terminated: { exitCode: 1, finishedAtMs: clock.now() } };
  runs.set("uid-1", { ...runs.get("uid-1")!, containers: { app: { state: ended } } });
  await pods.poll(signal); // the run ended: a restart is planned
  clock.advance(20);
  await pods.poll(signal); // and made
  assert.equal(made.length, 2);
  assert.equal(made[1].restarts, 1);
  assert.equal(made[1].network, made[0].network, "the restart keeps the pod's IP and agent");
  assert.equal(calls.filter((c) => c.startsWith("attach")).length, 1);

  const failing = fakeBackend([], clock, true);
  const failCalls: string[] = [];
  const other = new RemotePods({
    backend: failing.backend,
    clock,
    log,
    intervalMs: 1000,
    podNetwork: fakeNetwork(failCalls),
  });
  await assert.rejects(other.createPod(pod(), {}), /refused the job/);
  assert.deepEqual(failCalls, ["attach uid-1", "detach uid-1"]);
});

Deno.test("without a pod network the backend's own IP is reported", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const { backend, made } = fakeBackend(calls, clock);
  const pods = new RemotePods({ backend, clock, log, intervalMs: 1000 });
  await pods.createPod(pod(), {});
  assert.equal(made[0].network, undefined);
  assert.equal((await pods.getPod("team", "job"))?.status?.podIP, "10.9.9.9");
});

Deno.test("after a restart adopted pods are reattached, and pods not adopted are let go only after a list that answered", async () => {
  const calls: string[] = [];
  const clock = new FakeClock();
  const { backend, runs } = fakeBackend(calls, clock);
  const state = { running: { startedAtMs: clock.now() } };
  runs.set("uid-1", { pod: pod(), containers: { app: { state } }, podIP: "10.9.9.9" });
  let lists = 0;
  const list = backend.list;
  // The first list fails: nothing may be let go then, every kept pod would look gone.
  backend.list = (signal) =>
    ++lists === 1 ? Promise.reject(new Error("the backend is down")) : list(signal);
  const network: PodNetworkHandle = {
    ...fakeNetwork(calls),
    reattach(p) {
      calls.push(`reattach ${p.metadata?.uid}`);
      return Promise.resolve({
        podIP: "198.18.1.7",
        podIPs: ["198.18.1.7"],
        agentCommand: ["vkubelet", "agent"],
        agentCredential: "vkt1.uid-1.new",
      });
    },
    adopted(pods) {
      calls.push(`adopted ${pods.map((p) => p.metadata?.uid).join(",")}`);
      return Promise.resolve();
    },
  };
  const pods = new RemotePods({
    backend,
    clock,
    log,
    intervalMs: 1000,
    podNetwork: network,
    retryList: true,
  });
  const stop = new AbortController();
  const running = pods.run(stop.signal);
  for (let i = 0; i < 20 && lists < 1; i++) await new Promise((r) => setTimeout(r, 0));
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0)); // the failure handled
  assert.deepEqual(calls, [], "something was reattached or let go after a failed list");
  for (let i = 0; i < 50 && lists < 2; i++) {
    clock.advance(1000); // the next try of the list
    await new Promise((r) => setTimeout(r, 0));
  }
  await pods.listPods({});
  assert.deepEqual(calls, ["reattach uid-1", "adopted uid-1"]);
  assert.equal((await pods.getPod("team", "job"))?.status?.podIP, "198.18.1.7");
  stop.abort();
  await running;
});

// The host's side: the errors that mean an attachment is lost, and what a failed reattach keeps.

Deno.test("the errors a lost attachment rejects with are named as the kit's POD_NETWORK_LOST_ERRORS", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "uid-1.json"), "{ not json");
    await Deno.writeTextFile(join(dir, "uid-2.json"), '{"version":1,"uid":"uid-2"}');
    for (const uid of ["uid-1", "uid-2"]) {
      const err = await new AttachmentStore(dir).load(uid).then(() => undefined, (e) => e);
      assert.ok(err instanceof Error, `${uid}: a broken kept attachment was taken`);
      assert.ok(POD_NETWORK_LOST_ERRORS.includes(err.name), `${uid}: ${err.name} is not lost`);
      assert.match(err.message, /is not a tunnel attachment vkubelet keeps/);
    }
    const taken = new PodIPUnavailableError("team/job", ["127.0.80.7"], "it is taken");
    assert.ok(POD_NETWORK_LOST_ERRORS.includes(taken.name));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A TunnelNetwork of one loopback "pod IP" whose listens fail while `failing.n` > 0. */
function flakyNetwork(calls: string[], failing: { n: number }): TunnelNetwork {
  return {
    setUp: (p) => {
      calls.push(`setUp ${p.metadata?.uid}`);
      return Promise.resolve({ ips: ["127.0.80.7"], netns: "ns-uid-1" });
    },
    restore: (p) => Promise.resolve(void calls.push(`restore ${p.metadata?.uid}`)),
    tearDown: (p) => Promise.resolve(void calls.push(`tearDown ${p.metadata?.uid}`)),
    dial: () => {
      throw new Error("not dialed here");
    },
    listen: (_netns, port) => {
      if (failing.n-- > 0) {
        return Promise.reject(new Error(`The relay for port ${port} did not start within 5 s`));
      }
      return Promise.resolve({ close: () => Promise.resolve() });
    },
  };
}

Deno.test("a reattach that fails for a passing reason keeps the pod's namespace and kept attachment for the next try", async () => {
  const dir = await Deno.makeTempDir();
  const calls: string[] = [];
  const host = (failing: { n: number }) =>
    new TunnelHost({
      network: flakyNetwork(calls, failing),
      services: new ListedServices(),
      log: testLog,
      serverUrl: "https://127.0.0.1:10250",
      serverCaPem: "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
      stateDir: dir,
    });
  const p: Pod = {
    ...pod(),
    spec: { containers: [{ name: "app", image: "busybox", ports: [{ containerPort: 80 }] }] },
  };
  try {
    const first = host({ n: 0 });
    assert.equal((await first.attach(p)).podIP, "127.0.80.7");
    await first.close();
    // Restarted: the relay is slow to start at the first reattach.
    const after = host({ n: 1 });
    await assert.rejects(after.reattach(p), /did not start within 5 s/);
    assert.ok(!calls.includes("tearDown uid-1"), `torn down: ${calls}`);
    await Deno.stat(join(dir, "uid-1.json")); // still kept
    assert.equal((await after.reattach(p))?.podIP, "127.0.80.7", "the next try has it again");
    await after.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a remote pod network refuses a hostNetwork pod instead of a namespace-less attachment", async () => {
  const dir = await Deno.makeTempDir();
  // PodNetworks gives a hostNetwork pod the node's IPs and no namespace.
  const networks = {
    setUp: () => Promise.resolve({ ips: ["127.0.0.1"], resolvConf: "", hosts: "" }),
  } as unknown as PodNetworks;
  try {
    const remote = new RemotePodNetworks(networks, dir);
    await assert.rejects(
      remote.setUp({ ...pod(), spec: { ...pod().spec!, hostNetwork: true } }),
      /team\/job is on the host network/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "a relay that does not start listening is closed with its Unix listener",
  ignore: Deno.uid() !== 0,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const remote = new RemotePodNetworks({} as PodNetworks, dir);
      await Deno.mkdir(join(dir, "remote"));
      // No such namespace: nsenter fails, socat never listens, the wait gives up after 5 s.
      // Deno's sanitizers fail the test if the listener or its accept loop is left open.
      await assert.rejects(
        remote.listen(join(dir, "no-such-netns"), 8080, () => {}),
        /did not start listening within 5 s/,
      );
      await assert.rejects(
        Deno.stat(join(dir, "remote", "no-such-netns-8080.sock")),
        Deno.errors.NotFound,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
