import assert from "node:assert/strict";
import type { PodStatus } from "kubernetes-types/core/v1.d.ts";
import { canonicalJson, mergeStatus, statusEqual } from "../../../core/pods/pod_status.ts";
import { sameSpec } from "../../../core/pods/pod_sync.ts";

Deno.test("the canonical form sorts keys, drops empty values and truncates times to seconds", () => {
  const a = { b: [1, "", null], a: { z: "2026-01-01T00:00:00.123456Z", y: "" }, c: [], d: {} };
  assert.equal(canonicalJson(a), '{"a":{"z":"2026-01-01T00:00:00Z"},"b":[1]}');
  assert.equal(
    canonicalJson({ x: "not-a-time-but-long-enough" }),
    '{"x":"not-a-time-but-long-enough"}',
  );
  assert.equal(canonicalJson({ at: "2026-01-01T01:00:00+01:00" }), '{"at":"2026-01-01T00:00:00Z"}');
  assert.equal(canonicalJson(undefined), "");
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
