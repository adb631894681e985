import assert from "node:assert/strict";
import { formatGoFloat, metricsText } from "../../../provider/mod.ts";
import { mockProvider, samplePod } from "./_setup.ts";

Deno.test("a running container reports non-zero usage from its first moment", async () => {
  const { provider, options } = mockProvider();
  await provider.createPod(samplePod(), options);
  const summary = await provider.getStatsSummary(options);
  const [container] = summary.pods[0].containers;
  assert.equal(container.cpu?.usageNanoCores, 10_000_000);
  assert.ok(container.cpu!.usageCoreNanoSeconds! > 0);
  assert.equal(container.memory?.workingSetBytes, 16 * 2 ** 20);
  assert.deepEqual(summary.pods[0].podRef, { name: "web", namespace: "default", uid: "uid-web" });
  assert.equal(summary.node.nodeName, "vk-test");
});

Deno.test("cumulative CPU grows with the clock and the node's never goes down", async () => {
  const { provider, options, clock } = mockProvider();
  await provider.createPod(samplePod(), options);
  await clock.advance(10_000);
  const before = await provider.getStatsSummary(options);
  // 10m CPU for 10 s = 0.1 core-seconds.
  assert.equal(before.pods[0].containers[0].cpu?.usageCoreNanoSeconds, 100_000_000);
  await provider.deletePod(samplePod(), options);
  const after = await provider.getStatsSummary(options);
  assert.equal(after.pods.length, 0);
  assert.ok(after.node.cpu!.usageCoreNanoSeconds! >= before.node.cpu!.usageCoreNanoSeconds!);
});

Deno.test("the usage annotation overrides the configured usage", async () => {
  const { provider, options } = mockProvider({ usage: { cpu: "5m", memory: "8Mi" } });
  const pod = samplePod();
  pod.metadata = {
    ...pod.metadata,
    annotations: { "mock.vkubelet.io/usage": "cpu=250m,memory=64Mi" },
  };
  await provider.createPod(pod, options);
  const [container] = (await provider.getStatsSummary(options)).pods[0].containers;
  assert.equal(container.cpu?.usageNanoCores, 250_000_000);
  assert.equal(container.memory?.workingSetBytes, 64 * 2 ** 20);
});

Deno.test("metrics/resource has the kubelet's series, labels and timestamps", async () => {
  const { provider, options, clock } = mockProvider();
  await provider.createPod(samplePod(), options);
  await clock.advance(10_000);
  const text = await provider.getMetricsResource(options);
  const stamp = clock.now();
  const start = (clock.now() - 10_000) / 1000;
  const lines = text.split("\n");
  assert.deepEqual(lines.filter((l) => l.startsWith("# TYPE")), [
    "# TYPE container_cpu_usage_seconds_total counter",
    "# TYPE container_memory_working_set_bytes gauge",
    "# TYPE container_start_time_seconds gauge",
    "# TYPE node_cpu_usage_seconds_total counter",
    "# TYPE node_memory_working_set_bytes gauge",
    "# TYPE pod_cpu_usage_seconds_total counter",
    "# TYPE pod_memory_working_set_bytes gauge",
    "# TYPE resource_scrape_error gauge",
    "# TYPE scrape_error gauge",
  ]);
  const labels = '{container="app",namespace="default",pod="web"}';
  assert.ok(lines.includes(`container_cpu_usage_seconds_total${labels} 0.1 ${stamp}`));
  assert.ok(lines.includes(`container_memory_working_set_bytes${labels} 1.6777216e+07 ${stamp}`));
  assert.ok(lines.includes(`container_start_time_seconds${labels} ${formatGoFloat(start)}`));
  assert.ok(
    lines.includes(`pod_cpu_usage_seconds_total{namespace="default",pod="web"} 0.1 ${stamp}`),
  );
  assert.ok(
    lines.includes(
      "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds",
    ),
  );
  assert.ok(lines.includes("scrape_error 0"));
  assert.ok(text.endsWith("\n"));
});

Deno.test("a container without CPU or memory samples gets no start time series", () => {
  const time = "2026-01-01T00:00:10Z";
  const startTime = "2026-01-01T00:00:00Z";
  const text = metricsText({
    node: { nodeName: "vk-test", startTime },
    pods: [{
      podRef: { namespace: "ns", name: "p", uid: "u" },
      startTime,
      containers: [
        {
          name: "up",
          startTime,
          cpu: { time, usageCoreNanoSeconds: 1e9 },
          memory: { time, workingSetBytes: 1024 },
        },
        { name: "exited", startTime },
        { name: "cpu-only", startTime, cpu: { time, usageCoreNanoSeconds: 1e9 } },
      ],
    }],
  });
  const starts = text.split("\n").filter((l) => l.startsWith("container_start_time_seconds{"));
  // metrics-server would drop pod p whole if "exited" or "cpu-only" had a start time sample.
  assert.deepEqual(starts, [
    'container_start_time_seconds{container="up",namespace="ns",pod="p"} 1.7672256e+09',
  ]);
});

Deno.test("numbers are printed as Go prints them", () => {
  assert.equal(formatGoFloat(0), "0");
  assert.equal(formatGoFloat(10), "10");
  assert.equal(formatGoFloat(123456), "123456");
  assert.equal(formatGoFloat(1e6), "1e+06");
  assert.equal(formatGoFloat(1624396248.3020916), "1.6243962483020916e+09");
  assert.equal(formatGoFloat(0.0001), "0.0001");
  assert.equal(formatGoFloat(0.00001), "1e-05");
});
