/**
 * `/stats/summary` and `/metrics/resource` for aci pods come from Azure Monitor's `CpuUsage` and
 * `MemoryUsage` of each container group (Metrics - List). Checked against the documented response
 * shape only: Microsoft.Insights' OpenAPI description could not be had from a registry the
 * project reaches, so these reads go to the emulator directly, not behind Prism.
 */
import assert from "node:assert/strict";
import { usageOf } from "../../../providers/aci/client/monitor.ts";
import { aciPod, startProviderOnAci, until } from "../../../tools/harness/aci/env.ts";

const MiB = 2 ** 20;

Deno.test("each container's newest minute with a value is read from the documented answer", () => {
  const series = (container: string, data: { timeStamp: string; average?: number }[]) => ({
    metadatavalues: [{ name: { value: "containername" }, value: container }],
    data,
  });
  const usage = usageOf([
    {
      name: { value: "CpuUsage" },
      timeseries: [series("main", [
        { timeStamp: "2026-12-07T10:00:00Z", average: 100 },
        { timeStamp: "2026-12-07T10:01:00Z", average: 250 },
        { timeStamp: "2026-12-07T10:02:00Z" }, // the minute not yet aggregated
      ])],
    },
    {
      name: { value: "MemoryUsage" },
      timeseries: [series("main", [{ timeStamp: "2026-12-07T10:01:00Z", average: 64 * MiB }])],
    },
    { name: { value: "NetworkBytesReceivedPerSecond" }, timeseries: [] },
  ]);
  assert.deepEqual([...usage], [["main", {
    atMs: Date.parse("2026-12-07T10:01:00Z"),
    cpuMillicores: 250,
    memoryBytes: 64 * MiB,
  }]]);
});

Deno.test("a pod's usage reaches the stats summary and resource metrics from Azure Monitor", async () => {
  const env = await startProviderOnAci();
  try {
    env.emu.usage = (_group, container) =>
      container === "main"
        ? { cpuMillicores: 250, memoryBytes: 64 * MiB }
        : { cpuMillicores: 20, memoryBytes: 8 * MiB };
    const pod = aciPod("measured", {
      containers: [{ name: "main", image: "busybox" }, { name: "proxy", image: "busybox" }],
    });
    await env.provider.createPod(pod, {});
    await until(
      "the pod runs",
      () =>
        env.pushed.findLast((p) => p.metadata?.name === "measured")?.status?.phase === "Running" ||
        undefined,
    );
    const first = await until("the pod in the summary", async () => {
      const summary = await env.provider.getStatsSummary({});
      return summary.pods.find((p) => p.podRef.name === "measured");
    });
    const main = first.containers.find((c) => c.name === "main");
    assert.equal(main?.cpu?.usageNanoCores, 250_000_000, "250 millicores");
    assert.equal(main?.memory?.workingSetBytes, 64 * MiB);
    assert.equal(first.cpu?.usageNanoCores, 270_000_000, "the pod is its containers' sum");
    assert.equal(first.memory?.workingSetBytes, 72 * MiB);
    const asked = env.emu.requests.find((r) => r.includes("/Microsoft.Insights/metrics"));
    assert.match(asked ?? "", /^GET \/subscriptions\/.*\/containerGroups\/[^/]+\/providers\//);

    await new Promise((r) => setTimeout(r, 1200));
    const text = await env.provider.getMetricsResource({});
    const counter = text.match(
      /^container_cpu_usage_seconds_total\{container="main",namespace="team-a",pod="measured"\} ([\d.e+-]+) \d+$/m,
    );
    assert.ok(counter, `a CPU counter for main in:\n${text}`);
    // 250 millicores for the ~1.2 s between the two answers: about 0.3 s of CPU.
    assert.ok(Number(counter[1]) > 0.2 && Number(counter[1]) < 1, counter[1]);
    assert.match(
      text,
      /^container_memory_working_set_bytes\{container="main",namespace="team-a",pod="measured"\} 6\.7108864e\+07 \d+$/m,
    );
    await env.provider.deletePod(pod, {});
  } finally {
    await env.close();
  }
});
