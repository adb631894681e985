/**
 * `/stats/summary` and `/metrics/resource` for the virtual node, from cluster B's resource
 * metrics API (`metrics.k8s.io/v1beta1`, served by metrics-server), as tensile-kube does
 * (virtual-kubelet/tensile-kube PR #58). That API gives rates, not counters: the cumulative CPU
 * that `/metrics/resource` needs is integrated here from successive readings. Without the API
 * in B both answer {@link NotSupportedError} (the kubelet API's 501).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../../k8s/mod.ts";
import { isKubeNotFound, isServerUnavailable } from "../../../k8s/mod.ts";
import {
  type ContainerStats,
  NotSupportedError,
  type PodStats,
  quantityToNumber,
  type StatsSummary,
} from "../../../provider/mod.ts";
import { metricsText, podKeyOf } from "../../../provider/mod.ts";
import { downstreamError } from "../errors.ts";

interface PodMetrics {
  metadata: { name: string; namespace: string };
  timestamp: string;
  containers: { name: string; usage: { cpu?: string; memory?: string } }[];
}

/** Cumulative CPU per container, integrated from rates: core-nanoseconds and the last reading. */
export type CpuCounters = Map<string, { coreNs: number; atMs: number; nanoCores: number }>;

/** What a summary is built from. */
export interface DownstreamStatsOptions {
  nodeName: string;
  /** B's namespace of the forwarded pods; `undefined`: every namespace. */
  namespace: string | undefined;
  /** This node's downstream pods. */
  pods: Pod[];
  toUpstream: (pod: Pod) => { namespace: string; name: string; uid?: string } | undefined;
  counters: CpuCounters;
  nowMs: number;
  signal?: AbortSignal;
}

/** The summary of this node's pods, from B's metrics API. */
export async function downstreamStatsSummary(
  kube: Pick<KubeClient, "request">,
  options: DownstreamStatsOptions,
): Promise<StatsSummary> {
  const metrics = await readPodMetrics(kube, options.namespace, options.signal);
  return summarize(metrics, options);
}

/** `/metrics/resource` text of this node's pods, from B's metrics API. */
export async function downstreamMetricsText(
  kube: Pick<KubeClient, "request">,
  options: DownstreamStatsOptions,
): Promise<string> {
  return metricsText(await downstreamStatsSummary(kube, options));
}

async function readPodMetrics(
  kube: Pick<KubeClient, "request">,
  namespace: string | undefined,
  signal?: AbortSignal,
): Promise<PodMetrics[]> {
  try {
    const list = await kube.request<{ items?: PodMetrics[] }>({
      path: namespace
        ? `/apis/metrics.k8s.io/v1beta1/namespaces/${namespace}/pods`
        : "/apis/metrics.k8s.io/v1beta1/pods",
      signal,
    });
    return list?.items ?? [];
  } catch (err) {
    if (isKubeNotFound(err) || isServerUnavailable(err)) {
      throw new NotSupportedError(
        "the downstream cluster serves no resource metrics API (metrics.k8s.io); install metrics-server there for stats of forwarded pods",
        { cause: err },
      );
    }
    throw downstreamError("reading pod metrics", err);
  }
}

/** Builds the summary from metrics readings (exported for tests). */
export function summarize(metrics: PodMetrics[], options: DownstreamStatsOptions): StatsSummary {
  const byName = new Map(options.pods.map((p) => [podKeyOf(p), p]));
  const nowIso = new Date(options.nowMs).toISOString();
  const pods: PodStats[] = [];
  let nodeCores = 0, nodeCoreNs = 0, nodeBytes = 0;
  for (const item of metrics) {
    const pod = byName.get(podKeyOf(item));
    const up = pod && options.toUpstream(pod);
    if (!pod || !up) continue;
    const time = item.timestamp || nowIso;
    const startTime = pod.status?.startTime ?? time;
    const atMs = Date.parse(time) || options.nowMs;
    const containers = item.containers.map((c) =>
      containerStats(c, `${pod.metadata?.uid}/${c.name}`, { time, atMs, startTime }, options)
    );
    const podCores = sum(containers.map((c) => c.cpu!.usageNanoCores!));
    const podCoreNs = sum(containers.map((c) => c.coreNs));
    const podBytes = sum(containers.map((c) => c.memory!.workingSetBytes!));
    pods.push({
      podRef: { namespace: up.namespace, name: up.name, uid: up.uid ?? "" },
      startTime,
      containers: containers.map(({ coreNs: _, ...stats }) => stats),
      cpu: { time, usageNanoCores: podCores, usageCoreNanoSeconds: Math.round(podCoreNs) },
      memory: { time, workingSetBytes: podBytes, usageBytes: podBytes },
    });
    nodeCores += podCores;
    nodeCoreNs += podCoreNs;
    nodeBytes += podBytes;
  }
  const cpu = {
    time: nowIso,
    usageNanoCores: nodeCores,
    usageCoreNanoSeconds: Math.round(nodeCoreNs),
  };
  const memory = { time: nowIso, workingSetBytes: nodeBytes, usageBytes: nodeBytes };
  return { node: { nodeName: options.nodeName, startTime: nowIso, cpu, memory }, pods };
}

/** One container's reading, its CPU time integrated in `counters` (by `key`) across readings. */
function containerStats(
  c: PodMetrics["containers"][number],
  key: string,
  at: { time: string; atMs: number; startTime: string },
  options: Pick<DownstreamStatsOptions, "counters">,
): ContainerStats & { coreNs: number } {
  const { time, atMs, startTime } = at;
  const nanoCores = Math.round((quantityToNumber(c.usage.cpu ?? "0") ?? 0) * 1e9);
  const bytes = Math.round(quantityToNumber(c.usage.memory ?? "0") ?? 0);
  const last = options.counters.get(key);
  // Integrate the average of the two readings over the time between them.
  const coreNs = last
    ? last.coreNs + Math.max(0, atMs - last.atMs) * 1e6 * (last.nanoCores + nanoCores) / 2e9
    : Math.max(1, nanoCores / 1e3);
  options.counters.set(key, { coreNs, atMs, nanoCores });
  return {
    name: c.name,
    startTime,
    cpu: { time, usageNanoCores: nanoCores, usageCoreNanoSeconds: Math.round(coreNs) },
    memory: { time, workingSetBytes: bytes, usageBytes: bytes },
    coreNs,
  };
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
