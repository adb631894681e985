/**
 * The `/stats/summary` answer of a node whose pods run elsewhere: the pods' own figures, and a
 * node that adds them up (a remote provider has no node of its own to measure; the kubelet's node
 * figures are the machine's, cadvisor's root container).
 * @module
 */
import type { CpuStats, MemoryStats, PodStats, StatsSummary } from "./stats.ts";

/** Which node the summary is of. */
export interface SummaryNode {
  /** The node's name. */
  nodeName: string;
  /** When the node (vkubelet's provider) started, in ms since the epoch. */
  startMs: number;
}

/**
 * The summary of `pods` at `nowMs`: each node figure is the pods' sum, present where at least
 * one pod reports it (a backend that gives no rate leaves `usageNanoCores` out, not 0); with no
 * pods, every figure is 0.
 */
export function podsSummary(node: SummaryNode, nowMs: number, pods: PodStats[]): StatsSummary {
  const time = new Date(nowMs).toISOString();
  const sum = (f: (p: PodStats) => number | undefined) => {
    const values = pods.map(f).filter((v): v is number => v !== undefined);
    return values.length || !pods.length ? values.reduce((a, b) => a + b, 0) : undefined;
  };
  const cpu: CpuStats = {
    time,
    usageNanoCores: sum((p) => p.cpu?.usageNanoCores),
    usageCoreNanoSeconds: sum((p) => p.cpu?.usageCoreNanoSeconds),
  };
  const memory: MemoryStats = {
    time,
    usageBytes: sum((p) => p.memory?.usageBytes),
    workingSetBytes: sum((p) => p.memory?.workingSetBytes),
  };
  return {
    node: {
      nodeName: node.nodeName,
      startTime: new Date(node.startMs).toISOString(),
      cpu: withoutUndefined(cpu),
      memory: withoutUndefined(memory),
    },
    pods,
  };
}

function withoutUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
