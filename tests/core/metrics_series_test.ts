import assert from "node:assert/strict";
import { VkubeletMetrics } from "../../core/metrics.ts";
import { type Series, seriesOf } from "./metrics_series.ts";

const BEFORE: Series[] = JSON.parse(
  await Deno.readTextFile(new URL("./fixtures/metrics_series_before.json", import.meta.url)),
);

/** Every metric vkubelet has, updated once, rendered. */
async function render(): Promise<string> {
  const m = new VkubeletMetrics();
  m.workQueueDepth.set({ name: "pods" }, 1);
  m.syncLatency.observe({ result: "success" }, 0.1);
  m.apiRequests.inc({ verb: "GET", code: "200" });
  m.podsByPhase.set({ phase: "Running" }, 1);
  m.leaseRenewalLatency.observe({ result: "success" }, 0.1);
  m.kubeletApiRequests.inc({ route: "/healthz", method: "GET", code: "200" });
  return await m.render();
}

Deno.test("every series of /metrics keeps its name, labels and type", async () => {
  const now = seriesOf(await render());
  for (const series of BEFORE) {
    assert.deepEqual(now.find((s) => s.name === series.name), series, series.name);
  }
});

Deno.test("histograms keep the Prometheus default buckets", async () => {
  const text = await render();
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

Deno.test("prom-client's default process and runtime metrics are served too", async () => {
  const names = new Set(seriesOf(await render()).map((s) => s.name));
  for (
    const name of [
      "process_open_fds",
      "process_max_fds",
      "process_virtual_memory_bytes",
      "nodejs_eventloop_lag_seconds",
      "nodejs_heap_size_used_bytes",
    ]
  ) {
    assert.ok(names.has(name), name);
  }
});
