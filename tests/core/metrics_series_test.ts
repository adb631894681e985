import assert from "node:assert/strict";
import { VkubeletMetrics } from "../../core/metrics.ts";
import { type Series, seriesOf } from "./metrics_series.ts";

const BEFORE: Series[] = JSON.parse(
  await Deno.readTextFile(new URL("./fixtures/metrics_series_before.json", import.meta.url)),
);

/** Every metric vkubelet has, updated once, rendered. */
function render(): string {
  const m = new VkubeletMetrics();
  m.workQueueDepth.set(1, { name: "pods" });
  m.syncLatency.observe(0.1, { result: "success" });
  m.apiRequests.inc({ verb: "GET", code: "200" });
  m.podsByPhase.set(1, { phase: "Running" });
  m.leaseRenewalLatency.observe(0.1, { result: "success" });
  m.kubeletApiRequests.inc({ route: "/healthz", method: "GET", code: "200" });
  return m.registry.render();
}

Deno.test("every series of /metrics keeps its name, labels and type", () => {
  const now = seriesOf(render());
  for (const series of BEFORE) {
    assert.deepEqual(now.find((s) => s.name === series.name), series, series.name);
  }
});

Deno.test("histograms keep the Prometheus default buckets", () => {
  const text = render();
  const le = [...text.matchAll(/^vkubelet_pod_sync_duration_seconds_bucket\{.*le="([^"]+)"/gm)]
    .map((m) => m[1]);
  assert.deepEqual(le, [
    "0.005",
    "0.01",
    "0.025",
    "0.05",
    "0.1",
    "0.25",
    "0.5",
    "1",
    "2.5",
    "5",
    "10",
    "+Inf",
  ]);
});
