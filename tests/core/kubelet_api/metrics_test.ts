import assert from "node:assert/strict";
import { MetricsRegistry, VkubeletMetrics } from "../../../core/metrics.ts";

Deno.test("counters, gauges and histograms render in the Prometheus text format", () => {
  const registry = new MetricsRegistry();
  const requests = registry.counter({
    name: "x_requests_total",
    help: "Requests.",
    labelNames: ["verb", "code"],
  });
  const depth = registry.gauge({ name: "x_depth", help: "Depth." });
  const latency = registry.histogram({ name: "x_seconds", help: "Latency.", buckets: [0.1, 1] });
  requests.inc({ verb: "GET", code: "200" });
  requests.inc({ verb: "GET", code: "200" }, 2);
  requests.inc({ verb: "PATCH", code: "409" });
  depth.set(3);
  depth.dec();
  latency.observe(0.05);
  latency.observe(0.5);
  latency.observe(5);
  assert.equal(
    registry.render(),
    [
      "# HELP x_depth Depth.",
      "# TYPE x_depth gauge",
      "x_depth 2",
      "# HELP x_requests_total Requests.",
      "# TYPE x_requests_total counter",
      'x_requests_total{verb="GET",code="200"} 3',
      'x_requests_total{verb="PATCH",code="409"} 1',
      "# HELP x_seconds Latency.",
      "# TYPE x_seconds histogram",
      'x_seconds_bucket{le="0.1"} 1',
      'x_seconds_bucket{le="1"} 2',
      'x_seconds_bucket{le="+Inf"} 3',
      "x_seconds_sum 5.55",
      "x_seconds_count 3",
      "",
    ].join("\n"),
  );
});

Deno.test("label values are escaped and missing labels are a programmer error", () => {
  const registry = new MetricsRegistry();
  const gauge = registry.gauge({ name: "g", help: "h", labelNames: ["pod"] });
  gauge.set(1, { pod: 'a"b\\c\nd' });
  assert.match(registry.render(), /^g\{pod="a\\"b\\\\c\\nd"\} 1$/m);
  assert.throws(() => gauge.set(1, {}), TypeError);
  assert.throws(() => registry.gauge({ name: "g", help: "again" }), TypeError);
  assert.throws(() => registry.counter({ name: "bad-name", help: "" }), TypeError);
  const counter = registry.counter({ name: "c_total", help: "h" });
  assert.throws(() => counter.inc({}, -1), RangeError);
});

Deno.test("vkubelet's metrics include process memory and CPU", () => {
  const metrics = new VkubeletMetrics();
  const stop = metrics.syncLatency.startTimer({ result: "success" });
  stop();
  metrics.leaseRenewalLatency.observe(0.02, { result: "success" });
  metrics.apiRequests.inc({ verb: "GET", code: "200" });
  const text = metrics.registry.render();
  assert.match(text, /^vkubelet_pod_sync_duration_seconds_count\{result="success"\} 1$/m);
  assert.match(text, /^vkubelet_lease_renewal_duration_seconds_count\{result="success"\} 1$/m);
  assert.match(text, /^vkubelet_kube_api_requests_total\{verb="GET",code="200"\} 1$/m);
  assert.match(text, /^process_resident_memory_bytes [1-9]\d*$/m);
  assert.match(text, /^# TYPE process_cpu_seconds_total counter$/m);
  assert.match(text, /^process_start_time_seconds \d/m);
});
