/**
 * Usage figures for the mock: each running container uses a steady CPU rate and memory, so its
 * cumulative CPU grows with the clock and is never zero (metrics-server drops a whole pod when
 * one container reports zero: kubernetes-sigs/metrics-server pkg/scraper/client/resource/
 * decode.go). The node reports its own base usage plus its pods', and keeps the CPU of deleted
 * pods so that its counter never goes down.
 * @module
 */
import type { ContainerStats, MemoryStats, PodStats, StatsSummary } from "../../provider/mod.ts";
import type { MockPod } from "./provider.ts";
import { isRunning, longRunningContainers } from "./status.ts";

export { metricsText } from "../../provider/mod.ts";

/** A steady usage: CPU in billionths of a core, memory in bytes. */
export interface Usage {
  nanoCores: number;
  bytes: number;
}

/** Cumulative CPU in core-nanoseconds since `startMs`; at least one millisecond's worth. */
export function cpuNanoSeconds(usage: Usage, startMs: number, nowMs: number): number {
  return Math.round(usage.nanoCores * Math.max(nowMs - startMs, 1) / 1000);
}

/** Everything a summary is computed from. */
export interface SummaryInputs {
  nodeName: string;
  nowMs: number;
  startMs: number;
  nodeUsage: Usage;
  memoryCapacityBytes: number;
  retiredCpuNs: number;
  pods: Iterable<MockPod>;
}

/** The `/stats/summary` document for the node and its running pods. */
export function statsSummary(inputs: SummaryInputs): StatsSummary {
  const time = new Date(inputs.nowMs).toISOString();
  const pods: PodStats[] = [];
  let nodeCpuNs = inputs.retiredCpuNs +
    cpuNanoSeconds(inputs.nodeUsage, inputs.startMs, inputs.nowMs);
  let nodeNanoCores = inputs.nodeUsage.nanoCores;
  let nodeBytes = inputs.nodeUsage.bytes;
  for (const record of inputs.pods) {
    const containers = longRunningContainers(record.pod).map((c): ContainerStats => {
      const run = record.runs.get(c.name)!;
      const startTime = new Date(run.startedAtMs).toISOString();
      // A container that exited or waits to start uses nothing, and reports no usage (as a
      // kubelet reports an exited container: start time, no CPU or memory).
      if (!isRunning(run)) return { name: c.name, startTime };
      return {
        name: c.name,
        startTime,
        cpu: {
          time,
          usageNanoCores: record.usage.nanoCores,
          usageCoreNanoSeconds: cpuNanoSeconds(record.usage, run.startedAtMs, inputs.nowMs),
        },
        memory: memory(time, record.usage.bytes),
      };
    });
    const running = containers.filter((c) => c.cpu !== undefined);
    const podCpuNs = running.reduce((sum, c) => sum + c.cpu!.usageCoreNanoSeconds!, 0);
    const podBytes = record.usage.bytes * running.length;
    const podNanoCores = record.usage.nanoCores * running.length;
    nodeCpuNs += podCpuNs;
    nodeNanoCores += podNanoCores;
    nodeBytes += podBytes;
    const { name = "", namespace = "", uid = "" } = record.pod.metadata ?? {};
    pods.push({
      podRef: { name, namespace, uid },
      startTime: new Date(record.startMs).toISOString(),
      containers,
      cpu: { time, usageNanoCores: podNanoCores, usageCoreNanoSeconds: podCpuNs },
      memory: memory(time, podBytes),
      volume: [],
    });
  }
  const nodeMemory = memory(time, nodeBytes);
  if (inputs.memoryCapacityBytes > 0) {
    nodeMemory.availableBytes = Math.max(inputs.memoryCapacityBytes - nodeBytes, 0);
  }
  return {
    node: {
      nodeName: inputs.nodeName,
      startTime: new Date(inputs.startMs).toISOString(),
      cpu: { time, usageNanoCores: nodeNanoCores, usageCoreNanoSeconds: nodeCpuNs },
      memory: nodeMemory,
    },
    pods,
  };
}

function memory(time: string, bytes: number): MemoryStats {
  return { time, usageBytes: bytes, workingSetBytes: bytes, rssBytes: bytes };
}
