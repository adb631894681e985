/**
 * `/metrics/resource` keeps an idle container in metrics-server's view: metrics-server drops a
 * whole pod when one of its containers reports a CPU counter of 0 (pkg/scraper/client/resource/
 * decode.go), and a backend that measures coarsely (Zun's whole seconds) reads 0 for an idle one,
 * so the HPA had no figure and never scaled down.
 */
import assert from "node:assert/strict";
import { metricsText, podsSummary, type PodStats } from "../../provider/mod.ts";

function pod(coreNs: number): PodStats {
  const time = new Date().toISOString();
  const cpu = { time, usageCoreNanoSeconds: coreNs };
  const memory = { time, workingSetBytes: 4 << 20 };
  return {
    podRef: { namespace: "ns", name: "idle", uid: "u" },
    startTime: time,
    containers: [{ name: "c", startTime: time, cpu, memory }],
    cpu,
    memory,
  };
}

const containerCpu = (text: string) =>
  Number(
    text.split("\n").find((l) => l.startsWith("container_cpu_usage_seconds_total{"))!
      .split(" ")[1],
  );

Deno.test("an idle container's CPU counter of 0 is sent as 1 ns, a measured one as it is", () => {
  const node = { nodeName: "n", startMs: Date.now() - 1000 };
  assert.equal(containerCpu(metricsText(podsSummary(node, Date.now(), [pod(0)]))), 1e-9);
  assert.equal(containerCpu(metricsText(podsSummary(node, Date.now(), [pod(3e9)]))), 3);
});
