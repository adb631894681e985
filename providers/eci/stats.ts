/**
 * `/stats/summary` from DescribeContainerGroupMetric: each running group's newest sample gives
 * its pod's and containers' CPU and memory; the node is their sum. One call per running group,
 * so the summary costs as many API calls as the node has running pods (ECI has a batched metric
 * call, DescribeMultiContainerGroupMetric, left for later).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { ContainerStats, PodStats, RemoteRun } from "../../provider/mod.ts";
import type { ContainerGroup, EciApi, MetricRecord } from "./client/api.ts";

type Cpu = MetricRecord["CPU"];
type Memory = MetricRecord["memory"];

function cpuOf(cpu: Cpu | undefined, time: string) {
  return cpu
    ? { time, usageNanoCores: cpu.usageNanoCores, usageCoreNanoSeconds: cpu.usageCoreNanoSeconds }
    : undefined;
}

function memoryOf(m: Memory | undefined, time: string) {
  return m
    ? {
      time,
      usageBytes: m.usageBytes,
      workingSetBytes: m.workingSet,
      rssBytes: m.rss,
      availableBytes: m.availableBytes,
    }
    : undefined;
}

/** One pod's stats from its group's newest sample. */
export function podStatsOf(
  pod: Pod,
  startTimeMs: number,
  sample: MetricRecord | undefined,
): PodStats {
  const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
  const startTime = new Date(startTimeMs).toISOString();
  const time = sample?.timestamp ?? new Date().toISOString();
  const containers = (sample?.containers ?? []).map((c): ContainerStats => ({
    name: c.name ?? "",
    startTime,
    cpu: cpuOf(c.CPU, time),
    memory: memoryOf(c.memory, time),
  }));
  return {
    podRef: { namespace, name, uid },
    startTime,
    containers,
    cpu: cpuOf(sample?.CPU, time),
    memory: memoryOf(sample?.memory, time),
  };
}

/** The running groups' stats: each one's newest DescribeContainerGroupMetric sample. */
export async function groupsStats(
  api: Pick<EciApi, "metric">,
  running: { pod: Pod; run: RemoteRun<ContainerGroup>; startTimeMs: number }[],
  signal?: AbortSignal,
): Promise<PodStats[]> {
  const pods = [];
  for (const { pod, run, startTimeMs } of running) {
    const id = run.handle?.containerGroupId;
    if (!id) continue;
    const samples = await api.metric(id, signal).catch(() => []);
    pods.push(podStatsOf(pod, startTimeMs, samples.at(-1)));
  }
  return pods;
}
