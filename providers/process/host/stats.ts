/**
 * Real usage for `/stats/summary` and `/metrics/resource`: per container from its cgroup when
 * it has one, otherwise summed over the processes of its session in `/proc`; the node from
 * `/proc/stat` and `/proc/meminfo`. CPU rates come from the previous sample (or the average
 * since start), and a running container never reports zero (metrics-server drops a pod when a
 * container does: kubernetes-sigs/metrics-server pkg/scraper/client/resource/decode.go).
 * @module
 */
import type { ContainerStats, PodStats, StatsSummary } from "../../../provider/mod.ts";
import { cgroupUsage } from "./cgroups.ts";
import { memInfo, nodeCpuNs, sessionMembers, usageOf } from "./proc.ts";
import type { InstanceRecord } from "../state/state.ts";

/** One running instance to measure. */
export interface Measured {
  name: string;
  record: InstanceRecord;
}

/** One pod to measure. */
export interface MeasuredPod {
  namespace: string;
  name: string;
  uid: string;
  startTimeMs: number;
  containers: Measured[];
}

/** Keeps the last CPU sample per container and node, for rates. */
export class UsageSampler {
  readonly #last = new Map<string, { cpuNs: number; atMs: number }>();

  /** CPU rate in nanocores since the previous sample of `key` (or since `sinceMs`). */
  rate(key: string, cpuNs: number, nowMs: number, sinceMs: number): number {
    const last = this.#last.get(key);
    this.#last.set(key, { cpuNs, atMs: nowMs });
    const [fromNs, fromMs] = last && nowMs > last.atMs ? [last.cpuNs, last.atMs] : [0, sinceMs];
    const elapsed = Math.max(nowMs - fromMs, 1) / 1000;
    return Math.max(Math.round((cpuNs - fromNs) / elapsed), 0);
  }

  /** Forgets samples not in `keep`. */
  prune(keep: Set<string>): void {
    for (const key of this.#last.keys()) if (!keep.has(key)) this.#last.delete(key);
  }
}

/** Usage of one instance: cgroup if it has one, else its session's processes. */
export function instanceUsage(record: InstanceRecord): { cpuNs: number; memoryBytes: number } {
  if (record.cgroup) {
    const usage = cgroupUsage(record.cgroup);
    if (usage) return usage;
  }
  const { cpuNs, rssBytes } = usageOf(sessionMembers(record.pid));
  return { cpuNs, memoryBytes: rssBytes };
}

/** The `/stats/summary` document. */
export function statsSummary(
  nodeName: string,
  nodeStartMs: number,
  pods: MeasuredPod[],
  sampler: UsageSampler,
  nowMs: number,
): StatsSummary {
  const time = new Date(nowMs).toISOString();
  const keep = new Set<string>(["node"]);
  const podStats = pods.map((pod): PodStats => {
    const containers = pod.containers.map((c): ContainerStats => {
      const usage = instanceUsage(c.record);
      const cpuNs = Math.max(usage.cpuNs, 1);
      const bytes = Math.max(usage.memoryBytes, 1);
      keep.add(c.record.containerId);
      const rate = sampler.rate(c.record.containerId, cpuNs, nowMs, c.record.startedAtMs);
      return {
        name: c.name,
        startTime: new Date(c.record.startedAtMs).toISOString(),
        cpu: { time, usageNanoCores: Math.max(rate, 1), usageCoreNanoSeconds: cpuNs },
        memory: { time, usageBytes: bytes, workingSetBytes: bytes, rssBytes: bytes },
      };
    });
    const sum = (f: (c: ContainerStats) => number) => containers.reduce((a, c) => a + f(c), 0);
    const bytes = sum((c) => c.memory!.workingSetBytes!);
    return {
      podRef: { name: pod.name, namespace: pod.namespace, uid: pod.uid },
      startTime: new Date(pod.startTimeMs).toISOString(),
      containers,
      cpu: {
        time,
        usageNanoCores: sum((c) => c.cpu!.usageNanoCores!),
        usageCoreNanoSeconds: sum((c) => c.cpu!.usageCoreNanoSeconds!),
      },
      memory: { time, usageBytes: bytes, workingSetBytes: bytes, rssBytes: bytes },
      process_stats: { process_count: containers.length },
    };
  });
  const mem = memInfo();
  const total = mem.MemTotal ?? 0;
  const available = mem.MemAvailable ?? 0;
  const nodeCpu = nodeCpuNs();
  sampler.prune(keep);
  return {
    node: {
      nodeName,
      startTime: new Date(nodeStartMs).toISOString(),
      cpu: {
        time,
        usageNanoCores: sampler.rate("node", nodeCpu, nowMs, nodeStartMs),
        usageCoreNanoSeconds: nodeCpu,
      },
      memory: {
        time,
        availableBytes: available,
        usageBytes: total - (mem.MemFree ?? 0),
        workingSetBytes: total - available,
      },
    },
    pods: podStats,
  };
}
