/**
 * The node figures of a remote provider's `/stats/summary` (aci, eci, fargate, zun): the sum of
 * the pods' own, as metrics-server reads the node's usage from them.
 */
import assert from "node:assert/strict";
import { podsSummary, type PodStats } from "../../provider/mod.ts";

const node = { nodeName: "vk-sum", startMs: Date.parse("2026-12-07T10:00:00Z") };
const now = Date.parse("2026-12-07T10:05:00Z");

function pod(name: string, cpu?: { rate?: number; total: number }, memory?: number): PodStats {
  const time = new Date(now).toISOString();
  return {
    podRef: { name, namespace: "default", uid: `uid-${name}` },
    startTime: new Date(node.startMs).toISOString(),
    containers: [],
    ...(cpu && {
      cpu: { time, usageNanoCores: cpu.rate, usageCoreNanoSeconds: cpu.total },
    }),
    ...(memory !== undefined && {
      memory: { time, usageBytes: memory, workingSetBytes: memory },
    }),
  };
}

Deno.test("the node's usage is its pods' sum, at the time asked", () => {
  const pods = [
    pod("a", { rate: 250e6, total: 3e9 }, 64 << 20),
    pod("b", { rate: 50e6, total: 1e9 }, 16 << 20),
  ];
  const summary = podsSummary(node, now, pods);
  assert.deepEqual(summary.node, {
    nodeName: "vk-sum",
    startTime: "2026-12-07T10:00:00.000Z",
    cpu: { time: "2026-12-07T10:05:00.000Z", usageNanoCores: 300e6, usageCoreNanoSeconds: 4e9 },
    memory: {
      time: "2026-12-07T10:05:00.000Z",
      usageBytes: 80 << 20,
      workingSetBytes: 80 << 20,
    },
  });
  assert.equal(summary.pods, pods);
});

Deno.test("a figure no pod reports is left out, not reported as 0; a pod without data counts for nothing", () => {
  // Zun gives CPU time but no rate: a node usageNanoCores of 0 would read as an idle node.
  const summary = podsSummary(node, now, [pod("a", { total: 2e9 }, 10), pod("b")]);
  assert.equal("usageNanoCores" in summary.node.cpu!, false);
  assert.equal(summary.node.cpu!.usageCoreNanoSeconds, 2e9);
  assert.equal(summary.node.memory!.workingSetBytes, 10);
});

Deno.test("a node with no pods uses nothing: every figure is 0", () => {
  const { cpu, memory } = podsSummary(node, now, []).node;
  assert.equal(cpu!.usageNanoCores, 0);
  assert.equal(cpu!.usageCoreNanoSeconds, 0);
  assert.equal(memory!.workingSetBytes, 0);
});
