/**
 * The kit's restart rule (provider/restart.ts) against the kubelet's: which containers restart
 * under which policy, and the crash-loop back-off's schedule — at once, then 10 s doubling to
 * 5 min — and its reset after a run of more than twice the maximum.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type BackoffEntry,
  backoffUntil,
  containerRestartPolicy,
  crashLoopWaiting,
  nextBackoff,
  planRestart,
  RestartBackoff,
  restartKey,
  restartStep,
  shouldRestart,
  shouldRestartPod,
  unknownEnd,
} from "../../provider/mod.ts";
import { FakeClock } from "../fakes/clock.ts";

/** The waits between a failure and the restart after it, in seconds: the kubelet's. */
const KUBELET_SCHEDULE_S = [0, 10, 20, 40, 80, 160, 300, 300];

function pod(restartPolicy?: "Always" | "OnFailure" | "Never"): Pod {
  return {
    metadata: { namespace: "ns", name: "p", uid: "u1" },
    spec: {
      ...(restartPolicy ? { restartPolicy } : {}),
      initContainers: [{ name: "sidecar", restartPolicy: "Always" }, { name: "setup" }],
      containers: [{ name: "app" }],
    },
  };
}

Deno.test("restart policy: containers, init containers and sidecars as the kubelet restarts them", () => {
  // [pod policy, container, exit code, restarts?]
  const table: [("Always" | "OnFailure" | "Never")?, string?, number?, boolean?][] = [
    [undefined, "app", 0, true], // unset is Always
    ["Always", "app", 0, true],
    ["Always", "app", 1, true],
    ["OnFailure", "app", 0, false],
    ["OnFailure", "app", 137, true],
    ["Never", "app", 1, false],
    ["Always", "setup", 0, false], // an init container that succeeded is done
    ["Always", "setup", 1, true],
    ["OnFailure", "setup", 1, true],
    ["Never", "setup", 1, false], // the kubelet fails the pod instead
    ["Never", "sidecar", 0, true], // sidecars always restart
    ["Never", "sidecar", 1, true],
  ];
  for (const [policy, name, code, expected] of table) {
    const p = pod(policy);
    const c = [...p.spec!.initContainers!, ...p.spec!.containers].find((x) => x.name === name)!;
    assert.equal(
      shouldRestart(containerRestartPolicy(p, c), code!),
      expected,
      `${name} exiting ${code} under ${policy ?? "(unset)"}`,
    );
  }
});

Deno.test("a pod restarted as a whole: Always always, OnFailure when any container failed", () => {
  assert.ok(shouldRestartPod(pod(), [0, 0]));
  assert.ok(shouldRestartPod(pod("OnFailure"), [0, 2]));
  assert.ok(!shouldRestartPod(pod("OnFailure"), [0, 0]));
  assert.ok(!shouldRestartPod(pod("Never"), [1]));
});

Deno.test("RestartBackoff keeps the kubelet's schedule: at once, then 10 s doubling to 5 min", () => {
  const clock = new FakeClock();
  const backoff = new RestartBackoff({ clock });
  const key = restartKey(pod(), "app");
  const waits: number[] = [];
  for (let i = 0; i < KUBELET_SCHEDULE_S.length; i++) {
    const finished = clock.now(); // the container fails as soon as it starts
    const until = backoff.until(key, finished);
    waits.push((until - finished) / 1000);
    clock.jump(Math.max(until - clock.now(), 0));
    backoff.restarted(key, finished);
  }
  assert.deepEqual(waits, KUBELET_SCHEDULE_S);
  assert.equal(backoff.delayMs(key), 300_000);
});

Deno.test("a container that ran for more than twice the longest back-off starts over at once", () => {
  const clock = new FakeClock();
  const backoff = new RestartBackoff({ clock });
  let at = backoff.plan("k", clock.now());
  for (let i = 0; i < 7; i++) at = backoff.plan("k", at);
  assert.equal(backoff.delayMs("k"), 300_000);
  clock.jump(at - clock.now());
  // Ten minutes after the last restart the entry still counts (client-go: "> 2 * max")...
  assert.equal(backoff.until("k", at + 600_000), at + 600_000 + 300_000);
  // ...a moment later it is forgotten: the next restart is at once, the one after waits 10 s.
  const later = at + 600_001;
  clock.jump(later - clock.now());
  assert.equal(backoff.plan("k", later), later);
  assert.equal(backoff.plan("k", later + 1_000), later + 11_000);
});

Deno.test("the pure steps agree with the class, and take other numbers when told", () => {
  const first = planRestart(undefined, 0, { initialMs: 1_000, maxMs: 4_000 });
  assert.deepEqual(first, { atMs: 0, entry: { delayMs: 1_000, lastUpdateMs: 0 } });
  let entry = first.entry;
  const waits = [];
  for (let t = 100; waits.length < 4;) {
    const until = backoffUntil(entry, t, { maxMs: 4_000 });
    waits.push(until - t);
    entry = nextBackoff(entry, t, until, { initialMs: 1_000, maxMs: 4_000 });
    t = until + 100; // each run fails after 100 ms
  }
  assert.deepEqual(waits, [1_000, 2_000, 4_000, 4_000]);
});

Deno.test("a pod of the same name but another uid has its own back-off", () => {
  const clock = new FakeClock();
  const backoff = new RestartBackoff({ clock });
  const old = pod();
  backoff.plan(restartKey(old, "app"), clock.now());
  assert.equal(backoff.delayMs(restartKey(old, "app")), 10_000);
  const renewed = { ...old, metadata: { ...old.metadata, uid: "u2" } };
  assert.equal(backoff.delayMs(restartKey(renewed, "app")), 0);
  backoff.forget(restartKey(old, "app"));
  assert.equal(backoff.delayMs(restartKey(old, "app")), 0);
});

Deno.test("one restart state machine: at once, then back-off from the end, doubling to 5 min", () => {
  let entry: BackoffEntry | undefined;
  const waits: number[] = [];
  let now = 0;
  for (let i = 0; i < 8; i++) {
    now += 1_000; // each run lasts 1 s
    const finished = now;
    let step = restartStep(entry, finished, now);
    if (step.action === "back-off") {
      waits.push(step.delayMs);
      assert.equal(step.untilMs, finished + step.delayMs);
      assert.equal(restartStep(entry, finished, step.untilMs - 1).action, "back-off");
      now = step.untilMs;
      step = restartStep(entry, finished, now);
    }
    assert.equal(step.action, "start");
    if (step.action === "start") entry = step.entry;
  }
  assert.deepEqual(waits, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
});

Deno.test("a container in back-off waits with the kubelet's CrashLoopBackOff message", () => {
  const pod = { metadata: { name: "web-0", namespace: "shop", uid: "u-1" } };
  const message = (ms: number) => crashLoopWaiting(pod, "app", ms).message;
  assert.equal(crashLoopWaiting(pod, "app", 10_000).reason, "CrashLoopBackOff");
  assert.equal(message(10_000), "back-off 10s restarting failed container=app pod=web-0_shop(u-1)");
  // Go's time.Duration.String, as the kubelet prints backOff.Get(key).
  assert.deepEqual(
    [80_000, 160_000, 300_000, 1_500, 3_600_000].map((ms) => message(ms).split(" ")[1]),
    [
      "1m20s",
      "2m40s",
      "5m0s",
      "1.5s",
      "1h0m0s",
    ],
  );
});

Deno.test("a container vkubelet found ended is ContainerStatusUnknown with 137, as the kubelet says", () => {
  const deleted = unknownEnd("deleted", { nowMs: 5_000 });
  assert.deepEqual(deleted, {
    exitCode: 137,
    reason: "ContainerStatusUnknown",
    message: "The container could not be located when the pod was deleted.  " +
      "The container used to be Running",
    finishedAtMs: 5_000,
  });
  const lost = unknownEnd("lost", { nowMs: 7_000, startedAtMs: 1_000, detail: "job 42 is gone" });
  assert.equal(lost.reason, "ContainerStatusUnknown");
  assert.equal(lost.startedAtMs, 1_000);
  assert.match(lost.message!, /: job 42 is gone$/);
  assert.equal(
    unknownEnd("terminated", { nowMs: 0 }).message,
    "The container could not be located when the pod was terminated",
  );
});
