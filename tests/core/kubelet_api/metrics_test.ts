import assert from "node:assert/strict";
import { VkubeletMetrics } from "../../../core/metrics.ts";
import type { Tracer } from "../../../core/tracing.ts";
import { setup } from "../../../tools/harness/kubelet_api_fakes.ts";

Deno.test("vkubelet's metrics include process memory and CPU", async () => {
  const metrics = new VkubeletMetrics();
  const stop = metrics.syncLatency.startTimer({ result: "success" });
  stop();
  metrics.leaseRenewalLatency.observe({ result: "success" }, 0.02);
  metrics.apiRequests.inc({ verb: "GET", code: "200" });
  const text = await metrics.render();
  assert.match(text, /^vkubelet_pod_sync_duration_seconds_count\{result="success"\} 1$/m);
  assert.match(text, /^vkubelet_lease_renewal_duration_seconds_count\{result="success"\} 1$/m);
  assert.match(text, /^vkubelet_kube_api_requests_total\{verb="GET",code="200"\} 1$/m);
  assert.match(text, /^process_resident_memory_bytes [1-9]\d*$/m);
  assert.match(text, /^vkubelet_heap_used_bytes [1-9]\d*$/m);
  assert.match(text, /^# TYPE process_cpu_seconds_total counter$/m);
  assert.match(text, /^process_start_time_seconds \d/m);
});

Deno.test("collectors run before each render, so gauges read at scrape time are fresh", async () => {
  const metrics = new VkubeletMetrics();
  let depth = 1;
  metrics.onCollect(() => metrics.workQueueDepth.set({ name: "pods" }, depth));
  assert.match(await metrics.render(), /^vkubelet_workqueue_depth\{name="pods"\} 1$/m);
  depth = 7;
  assert.match(await metrics.render(), /^vkubelet_workqueue_depth\{name="pods"\} 7$/m);
});

Deno.test("with a tracer, each kubelet API request is a server span named by method and route", async () => {
  const spans: {
    name: string;
    kind?: string;
    attributes: Record<string, unknown>;
    ended: boolean;
  }[] = [];
  const tracer: Tracer = {
    start(name, options = {}) {
      const span = {
        name,
        kind: options.kind,
        attributes: { ...options.attributes },
        ended: false,
      };
      spans.push(span);
      return {
        context: { traceId: "t" },
        setAttribute: (k, v) => void (span.attributes[k] = v),
        fail: () => {},
        end: () => void (span.ended = true),
      };
    },
  };
  await using t = await setup({ tracer });
  const res = await t.get("/containerLogs/default/web/app");
  await res.body?.cancel();
  const unauthenticated = await t.app.request("/pods");
  await unauthenticated.body?.cancel();
  assert.deepEqual(spans.map((s) => [s.name, s.kind, s.attributes["http.response.status_code"]]), [
    ["GET /containerLogs", "server", res.status],
    ["GET /pods", "server", 401],
  ]);
  assert.ok(spans.every((s) => s.ended));
});
