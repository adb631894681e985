/**
 * A whole-job restart on the kit's RemotePods, with a fake interLink API and a fake clock: the
 * ended job stays with the plugin through the back-off (its logs with it), is deleted when the next
 * is made, and the next is created only after that; a lost job is not deleted, and a restart
 * whose delete gets no answer makes no second job.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { FakeClock } from "../../../base/fake_clock.ts";
import { RemotePods } from "../../../provider/mod.ts";
import { InterlinkBackend } from "../../../providers/interlink/backend.ts";
import type { InterlinkPodStatus } from "../../../providers/interlink/client/wire.ts";

const signal = new AbortController().signal;
const pod: Pod = {
  metadata: { namespace: "ns", name: "p", uid: "u1" },
  spec: { containers: [{ name: "app", image: "img" }] },
};

/** One pod's job at the fake plugin: its state, and every call made, in order. */
function setup() {
  const clock = new FakeClock();
  const calls: string[] = [];
  const plugin = { jobs: 0, exitCode: undefined as number | undefined, leftOut: false };
  let deleteAnswers = true;
  const status = (): InterlinkPodStatus[] =>
    plugin.jobs === 0 || plugin.leftOut ? [] : [{
      name: "p",
      namespace: "ns",
      UID: "u1",
      JID: `job-${plugin.jobs}`,
      containers: [{
        name: "app",
        image: "img",
        imageID: "",
        ready: plugin.exitCode === undefined,
        restartCount: 0,
        state: plugin.exitCode === undefined
          ? { running: {} }
          : { terminated: { exitCode: plugin.exitCode } },
      }],
    }];
  const backend = new InterlinkBackend({
    api: {
      status: () => Promise.resolve(status()),
      create: () => {
        calls.push("/create");
        plugin.exitCode = undefined;
        plugin.leftOut = false;
        return Promise.resolve(`job-${++plugin.jobs}`);
      },
      delete: () => {
        calls.push("/delete");
        return deleteAnswers ? Promise.resolve() : Promise.reject(new Error("no answer"));
      },
    },
    config: {
      target: "plugin",
      statusCacheWindow: 5_000,
      createAttempts: 3,
      tokenExpirationSeconds: 3600,
    },
    nodeName: "n1",
    clock,
    log: getLogger(["test"]),
    event: (_pod, _type, reason) => void calls.push(reason),
    hostIP: "127.0.0.1",
  });
  const pods = new RemotePods({
    backend,
    clock,
    log: getLogger(["test"]),
    intervalMs: 1_000,
    pollBackoff: true,
  });
  const poll = async (seconds = 1) => {
    for (let s = 0; s < seconds; s++) {
      clock.jump(1_000);
      await pods.poll(signal);
    }
  };
  return { pods, plugin, calls, poll, noDeleteAnswer: () => deleteAnswers = false };
}

Deno.test("the ended job stays through the back-off and is deleted just before the next is made", async () => {
  const { pods, plugin, calls, poll } = setup();
  await pods.createPod(structuredClone(pod), { signal });
  plugin.exitCode = 1;
  await poll(); // the first restart comes at once
  assert.deepEqual(calls, ["/create", "/delete", "/create", "Restarted"]);
  plugin.exitCode = 1;
  calls.length = 0;
  await poll(9);
  assert.deepEqual(calls, [], "through the 10 s back-off the plugin keeps the ended job");
  const waiting = (await pods.getPod("ns", "p"))!.status!.containerStatuses![0];
  assert.equal(waiting.state?.waiting?.reason, "CrashLoopBackOff");
  assert.equal(waiting.lastState?.terminated?.exitCode, 1);
  await poll(2);
  assert.deepEqual(calls, ["/delete", "/create", "Restarted"]);
  assert.equal((await pods.getPod("ns", "p"))!.status!.containerStatuses![0].restartCount, 2);
});

Deno.test("a restart whose /delete gets no answer makes no second job; it is tried again after a back-off", async () => {
  const { pods, plugin, calls, poll, noDeleteAnswer } = setup();
  await pods.createPod(structuredClone(pod), { signal });
  noDeleteAnswer();
  plugin.exitCode = 1;
  await poll(3); // the restart at once fails: not tried again at each poll
  assert.deepEqual(calls, ["/create", "/delete"]);
  const app = (await pods.getPod("ns", "p"))!.status!.containerStatuses![0];
  assert.equal(app.state?.waiting?.reason, "CreateContainerError");
  assert.match(app.state?.waiting?.message ?? "", /no answer/);
  await poll(8); // 10 s after the failed try
  assert.deepEqual(calls, ["/create", "/delete", "/delete"]);
  assert.equal(plugin.jobs, 1);
});

Deno.test("a lost job is not deleted: the next is created after the window and two answers", async () => {
  const { pods, plugin, calls, poll } = setup();
  await pods.createPod(structuredClone(pod), { signal });
  await poll(); // the sighting
  plugin.leftOut = true;
  await poll(5);
  assert.ok(!calls.includes("InterlinkPodLost"), "within statusCacheWindow");
  await poll(2);
  assert.deepEqual(calls, ["/create", "InterlinkPodLost", "/create", "Restarted"]);
  const status = (await pods.getPod("ns", "p"))!.status!.containerStatuses![0];
  // The kit's one rule for a lost run, the kubelet's reason for a container it cannot find.
  assert.equal(status.lastState?.terminated?.reason, "ContainerStatusUnknown");
  assert.match(status.lastState?.terminated?.message ?? "", /could not be located/);
  assert.equal(status.lastState?.terminated?.exitCode, 137);
});
