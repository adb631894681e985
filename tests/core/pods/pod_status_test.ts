import assert from "node:assert/strict";
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import {
  canonicalEqual,
  lifecycleEvents,
  mergeStatus,
  statusEqual,
} from "../../../core/pods/pod_status.ts";
import { sameSpec } from "../../../core/pods/pod_sync.ts";

Deno.test("the canonical form sorts keys, drops empty values and truncates times to seconds", () => {
  const a = { b: [1, "", null], a: { z: "2026-01-01T00:00:00.123456Z", y: "" }, c: [], d: {} };
  assert.ok(canonicalEqual(a, { a: { z: "2026-01-01T00:00:00Z" }, b: [1] }));
  assert.ok(!canonicalEqual(a, { a: { z: "2026-01-01T00:00:01Z" }, b: [1] }));
  const text = { x: "not-a-time-but-long-enough" };
  assert.ok(canonicalEqual(text, { x: "not-a-time-but-long-enough" }));
  assert.ok(!canonicalEqual(text, { x: "not-a-time-but-long-enougH" }));
  assert.ok(canonicalEqual({ at: "2026-01-01T01:00:00+01:00" }, { at: "2026-01-01T00:00:00Z" }));
  assert.ok(canonicalEqual(undefined, {}));
});

/**
 * The canonical form spelled out, as the comparison's specification: keys sorted, empty values
 * (undefined, null, "", empty lists and objects) dropped, times as whole UTC seconds.
 */
function canonicalJson(value: unknown): string {
  const time = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      if (v === "") return undefined;
      return time.test(v) ? `${new Date(v).toISOString().slice(0, 19)}Z` : v;
    }
    if (Array.isArray(v)) {
      const items = v.map(walk).filter((x) => x !== undefined);
      return items.length ? items : undefined;
    }
    if (v && typeof v === "object") {
      const entries = Object.keys(v).sort()
        .map((k) => [k, walk((v as Record<string, unknown>)[k])] as const)
        .filter(([, x]) => x !== undefined);
      return entries.length ? Object.fromEntries(entries) : undefined;
    }
    return v === null ? undefined : v;
  };
  return JSON.stringify(walk(value)) ?? "";
}

/** A small seeded generator (mulberry32), so a failure names a reproducible case. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LEAVES = [
  "",
  null,
  0,
  1,
  true,
  false,
  "Running",
  "2026-01-01T00:00:00Z",
  "2026-01-01T00:00:00.25Z",
  "2026-01-01T01:00:00+01:00",
  "2026-01-01T00:00:01Z",
];

function value(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 2 || r < 0.45) return LEAVES[Math.floor(rand() * LEAVES.length)];
  const n = Math.floor(rand() * 3);
  if (r < 0.7) return Array.from({ length: n }, () => value(rand, depth + 1));
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`k${Math.floor(rand() * 3)}${i}`, value(rand, depth + 1)]),
  );
}

/** A copy of `v` with a few changes that the canonical form may or may not see. */
function variant(rand: () => number, v: unknown): unknown {
  const r = rand();
  if (r < 0.15) return LEAVES[Math.floor(rand() * LEAVES.length)];
  if (Array.isArray(v)) {
    const out = v.map((x) => variant(rand, x));
    if (rand() < 0.3) {
      out.splice(Math.floor(rand() * (out.length + 1)), 0, rand() < 0.5 ? null : []);
    }
    return out;
  }
  if (v && typeof v === "object") {
    const entries = Object.entries(v).map(([k, x]) => [k, variant(rand, x)] as const);
    if (rand() < 0.3) entries.push(["extra", rand() < 0.5 ? "" : { e: null }]);
    if (rand() < 0.5) entries.reverse();
    return Object.fromEntries(entries);
  }
  return v;
}

Deno.test("the canonical comparison agrees with comparing canonical forms", () => {
  const rand = random(20261202);
  let equal = 0;
  let different = 0;
  for (let i = 0; i < 5000; i++) {
    const a = value(rand, 0);
    const b = rand() < 0.5 ? variant(rand, a) : value(rand, 0);
    const expected = canonicalJson(a) === canonicalJson(b);
    assert.equal(
      canonicalEqual(a, b),
      expected,
      `case ${i}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`,
    );
    if (expected) equal++;
    else different++;
  }
  // Both answers were exercised, not just one.
  assert.ok(equal > 500 && different > 500, `equal ${equal}, different ${different}`);
});

Deno.test("a status read back with nulls and another key order equals the one written", () => {
  const written: PodStatus = {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:01Z" }],
    podIP: "127.0.0.5",
  };
  const readBack = {
    podIP: "127.0.0.5",
    conditions: [{
      lastProbeTime: null,
      lastTransitionTime: "2026-01-01T00:00:01Z",
      status: "True",
      type: "Ready",
    }],
    phase: "Running",
  } as unknown as PodStatus;
  assert.ok(statusEqual(readBack, written));
  assert.ok(!statusEqual(readBack, { ...written, podIP: "127.0.0.6" }));
  assert.ok(!statusEqual(undefined, written));
  assert.ok(statusEqual(undefined, { phase: "" }));
});

Deno.test("merging a reported status leaves the report as it was", () => {
  const reported: PodStatus = {
    phase: "Running",
    startTime: "2026-01-01T00:00:00.5Z",
    conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:01.5Z" }],
  };
  const before = structuredClone(reported);
  const merged = mergeStatus({ qosClass: "BestEffort" }, reported, { hostIps: ["10.0.0.1"] });
  assert.deepEqual(reported, before);
  assert.equal(merged.startTime, "2026-01-01T00:00:00Z");
  assert.equal(merged.hostIP, "10.0.0.1");
  assert.equal(merged.qosClass, "BestEffort");
  assert.ok(statusEqual(merged, structuredClone(merged)));
});

Deno.test("a merged status shares the report's parts that needed no change", () => {
  const ready = { type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:01Z" };
  const reported: PodStatus = {
    phase: "Running",
    conditions: [ready],
    containerStatuses: [{
      name: "app",
      image: "nginx",
      imageID: "",
      ready: true,
      restartCount: 0,
      state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
    }],
    podIPs: [{ ip: "127.1.0.5" }],
  };
  const merged = mergeStatus({ conditions: [ready] }, reported, {
    hostIps: ["127.0.0.1"],
    now: Date.parse("2026-01-01T00:05:00Z"),
  });
  // Whole-second times already: nothing copied, so the informer's copy of the written status
  // can share the provider's objects.
  assert.equal(merged.containerStatuses, reported.containerStatuses);
  assert.equal(merged.conditions, reported.conditions);
  assert.equal(merged.podIPs, reported.podIPs);
  assert.equal(merged.hostIP, "127.0.0.1");
  assert.equal(reported.hostIP, undefined, "the report is not changed");
  // A time with a fraction is a copy of just that object and the ones holding it.
  const fraction = structuredClone(reported);
  fraction.containerStatuses![0].state!.running!.startedAt = "2026-01-01T00:00:00.25Z";
  const truncated = mergeStatus(undefined, fraction, { hostIps: [] });
  assert.equal(truncated.containerStatuses![0].state!.running!.startedAt, "2026-01-01T00:00:00Z");
  assert.equal(fraction.containerStatuses![0].state!.running!.startedAt, "2026-01-01T00:00:00.25Z");
  assert.equal(truncated.podIPs, fraction.podIPs);
});

Deno.test("specs that differ only in key order or empty fields are the same spec", () => {
  const a = {
    metadata: { labels: { x: "1", y: "2" } },
    spec: { containers: [{ name: "c", image: "i" }] },
  };
  const b = {
    metadata: { labels: { y: "2", x: "1" } },
    spec: { containers: [{ image: "i", name: "c", args: [] }] },
  };
  assert.ok(sameSpec(a, b));
  assert.ok(!sameSpec(a, { ...b, spec: { containers: [{ name: "c", image: "j" }] } }));
});

/** A container status of a crash-looping container. */
function crashLoop(restartCount: number, startedAt: string): PodStatus {
  return {
    containerStatuses: [{
      name: "main",
      image: "busybox",
      imageID: "",
      ready: false,
      restartCount,
      state: { waiting: { reason: "CrashLoopBackOff", message: "back-off 10s" } },
      lastState: {
        terminated: { exitCode: 3, reason: "Error", startedAt, finishedAt: startedAt },
      },
    }],
  };
}

const crasher: Pod = { metadata: { name: "crasher", namespace: "ns", uid: "u1" } };
const reasons = (events: { reason: string }[]) => events.map((e) => e.reason);

Deno.test("a restart between two writes in back-off is reported: Created, Started, BackOff again", () => {
  // The instance started and crashed before its `running` state was written (statuses are
  // coalesced): the kubelet would have recorded the start and the back-off again.
  const before = crashLoop(1, "2026-01-01T00:00:00Z");
  const after = crashLoop(2, "2026-01-01T00:00:10Z");
  assert.deepEqual(reasons(lifecycleEvents(crasher, before, after)), [
    "Created",
    "Started",
    "BackOff",
  ]);
});

Deno.test("a back-off written again without a restart is not reported again", () => {
  const before = crashLoop(2, "2026-01-01T00:00:10Z");
  assert.deepEqual(lifecycleEvents(crasher, before, crashLoop(2, "2026-01-01T00:00:10Z")), []);
});

Deno.test("a container that started and ended between two writes was started", () => {
  const before: PodStatus = {
    containerStatuses: [{
      name: "main",
      image: "busybox",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: "ContainerCreating" } },
    }],
  };
  const ended = (reason: string): PodStatus => ({
    containerStatuses: [{
      ...before.containerStatuses![0],
      state: { terminated: { exitCode: 3, reason, startedAt: "2026-01-01T00:00:00Z" } },
    }],
  });
  assert.deepEqual(reasons(lifecycleEvents(crasher, before, ended("Error"))), [
    "Created",
    "Started",
  ]);
  assert.deepEqual(lifecycleEvents(crasher, before, ended("StartError")), [], "it never ran");
});

Deno.test("a running container seen again is not started again; its end is no start", () => {
  const running: PodStatus = {
    containerStatuses: [{
      name: "main",
      image: "busybox",
      imageID: "",
      ready: true,
      restartCount: 0,
      state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
    }],
  };
  const done: PodStatus = {
    containerStatuses: [{
      ...running.containerStatuses![0],
      state: {
        terminated: { exitCode: 0, reason: "Completed", startedAt: "2026-01-01T00:00:00Z" },
      },
    }],
  };
  assert.deepEqual(reasons(lifecycleEvents(crasher, undefined, running)), ["Created", "Started"]);
  assert.deepEqual(lifecycleEvents(crasher, running, running), []);
  assert.deepEqual(lifecycleEvents(crasher, running, done), []);
});
