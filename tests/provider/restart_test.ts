/**
 * The kit's restart rule (provider/restart.ts) against the kubelet's: which containers restart
 * under which policy, and the crash-loop back-off's schedule — at once, then 10 s doubling to
 * 5 min — and its reset after a run of more than twice the maximum.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  backoffUntil,
  containerRestartPolicy,
  nextBackoff,
  planRestart,
  RestartBackoff,
  restartKey,
  shouldRestart,
  shouldRestartPod,
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
