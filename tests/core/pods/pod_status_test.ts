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
