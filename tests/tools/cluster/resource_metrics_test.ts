import assert from "node:assert/strict";
import type { MockPod } from "../../../providers/mock/provider.ts";
import { metricsText, statsSummary } from "../../../providers/mock/stats.ts";
import { decodeScrape, usageProblems } from "../../../tools/cluster/resource_metrics.ts";

const t0 = Date.parse("2026-01-01T00:00:00Z");

function mockScrape(nowMs: number) {
  const record = {
    pod: {
      metadata: { name: "web", namespace: "ns", uid: "u1" },
      spec: { containers: [{ name: "app" }, { name: "proxy" }] },
    },
    startMs: t0,
    runs: new Map([["app", { startedAtMs: t0 }], ["proxy", { startedAtMs: t0 + 1000 }]]),
    usage: { nanoCores: 250_000_000, bytes: 64 * 2 ** 20 },
  } as unknown as MockPod;
  const text = metricsText(statsSummary({
    nodeName: "vk",
    nowMs,
    startMs: t0,
    nodeUsage: { nanoCores: 50_000_000, bytes: 128 * 2 ** 20 },
    memoryCapacityBytes: 2 ** 40,
    retiredCpuNs: 0,
    pods: [record],
  }));
  return { text, decoded: decodeScrape(text, nowMs) };
}

Deno.test("metrics-server keeps the mock's node and pod and can compute usage from two scrapes", () => {
  const first = mockScrape(t0 + 20_000);
  const second = mockScrape(t0 + 30_000);
  assert.deepEqual(first.decoded.problems, []);
  assert.deepEqual(second.decoded.problems, []);
  assert.deepEqual([...second.decoded.pods.keys()], ["ns/web"]);
  assert.deepEqual([...second.decoded.pods.get("ns/web")!.keys()].sort(), ["app", "proxy"]);
  assert.deepEqual(usageProblems(first.decoded, second.decoded), []);
  // The rate metrics-server derives: Δcpu / Δt.
  const app = (d: typeof first) => d.decoded.pods.get("ns/web")!.get("app")!;
  const rate = (app(second).cpuNs - app(first).cpuNs) / 10;
  assert.ok(Math.abs(rate - 250_000_000) < 1000, `${rate} ns/s`);
  assert.equal(app(second).memoryBytes, 64 * 2 ** 20);
  assert.equal(second.decoded.node!.memoryBytes, (128 + 2 * 64) * 2 ** 20);
});

Deno.test("one container at zero CPU drops its whole pod, as metrics-server does", () => {
  const text = [
    'container_cpu_usage_seconds_total{container="a",namespace="ns",pod="p"} 0 1000',
    'container_memory_working_set_bytes{container="a",namespace="ns",pod="p"} 10 1000',
    'container_cpu_usage_seconds_total{container="b",namespace="ns",pod="p"} 1 1000',
    'container_memory_working_set_bytes{container="b",namespace="ns",pod="p"} 10 1000',
    'container_cpu_usage_seconds_total{container="a",namespace="ns",pod="q"} 1 1000',
    'container_memory_working_set_bytes{container="a",namespace="ns",pod="q"} 10 1000',
    "node_cpu_usage_seconds_total 2 1000",
    "node_memory_working_set_bytes 0 1000",
  ].join("\n");
  const decoded = decodeScrape(text, 5000);
  assert.deepEqual([...decoded.pods.keys()], ["ns/q"]);
  assert.equal(decoded.node, undefined);
  assert.equal(decoded.problems.length, 2);
  assert.match(decoded.problems.join("\n"), /pod ns\/p dropped: container "a"/);
  assert.match(decoded.problems.join("\n"), /node dropped/);
});

Deno.test("a start time without usage series drops the pod; missing timestamps use the request time", () => {
  const text = [
    'container_start_time_seconds{container="a",namespace="ns",pod="p"} 1.5',
    'container_cpu_usage_seconds_total{container="b",namespace="ns",pod="p"} 1',
    'container_memory_working_set_bytes{container="b",namespace="ns",pod="p"} 10',
  ].join("\n");
  const decoded = decodeScrape(text, 5000);
  assert.equal(decoded.pods.size, 0);
  assert.match(decoded.problems.join("\n"), /container "a" has cpu 0 ns/);
  const ok = decodeScrape(text.split("\n").slice(1).join("\n"), 5000);
  assert.equal(ok.pods.get("ns/p")!.get("b")!.timestampMs, 5000);
});

Deno.test("a timestamp that does not advance or a CPU counter that goes down is reported", () => {
  const first = mockScrape(t0 + 20_000);
  assert.match(usageProblems(first.decoded, first.decoded).join("\n"), /does not advance/);
  const later = mockScrape(t0 + 30_000);
  assert.match(usageProblems(later.decoded, first.decoded).join("\n"), /CPU went down/);
  const broken = decodeScrape("garbage line\n", 0);
  assert.match(broken.problems[0], /line 1 is not a Prometheus sample/);
});
