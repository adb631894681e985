/**
 * A container group's CPU and memory use from Azure Monitor: Metrics - List
 * (`GET {groupId}/providers/Microsoft.Insights/metrics`, api-version 2018-01-01) with
 * `metricnames=CpuUsage,MemoryUsage`, the average over each minute (`interval=PT1M`) of the last
 * five, split by container (`$filter=containerName eq '*'`). ACI's metrics, as Microsoft's
 * "Supported metrics for Microsoft.ContainerInstance/containerGroups" lists them: `CpuUsage`,
 * CPU on all cores in millicores (unit Count), and `MemoryUsage`, in bytes, each with the
 * dimension `containerName` and a one-minute grain.
 *
 * Written against the documented response (`Response { timespan, interval, value: Metric[] }`,
 * `Metric { name.value, unit, timeseries: [{ metadatavalues, data: [{ timeStamp, average }] }] }`):
 * Microsoft.Insights' OpenAPI description was not available from any registry the project can
 * reach, so unlike ACI's own calls this one is not checked behind Prism. It goes through the ACI
 * client's pipeline — its credential, retries and the ARM read budget (metric reads are ARM reads
 * and, says Microsoft's throttling page, a common cause of throttled subscriptions).
 * @module
 */
import type { ContainerInstanceManagementClient } from "@azure/arm-containerinstance";
import { createPipelineRequest } from "@azure/core-rest-pipeline";
import { aciError } from "../azure.ts";

/** The Metrics - List api-version read. */
export const METRICS_API_VERSION = "2018-01-01";

/** One container's newest minute. */
export interface ContainerUsage {
  /** When the minute began (ms since the epoch). */
  atMs: number;
  /** Average CPU over the minute, in millicores. */
  cpuMillicores?: number;
  /** Average memory in use over the minute, in bytes. */
  memoryBytes?: number;
}

interface MetricValue {
  timeStamp: string;
  average?: number;
}

interface Metric {
  name: { value: string };
  timeseries?: {
    metadatavalues?: { name: { value: string }; value?: string }[];
    data?: MetricValue[];
  }[];
}

/** Each container's newest minute with a value, by container name. */
export async function readGroupUsage(
  client: ContainerInstanceManagementClient,
  endpoint: string,
  groupId: string,
  options: { nowMs: number; signal?: AbortSignal },
): Promise<Map<string, ContainerUsage>> {
  const end = new Date(options.nowMs);
  const start = new Date(options.nowMs - 5 * 60_000);
  const query = new URLSearchParams({
    "api-version": METRICS_API_VERSION,
    metricnames: "CpuUsage,MemoryUsage",
    aggregation: "Average",
    interval: "PT1M",
    timespan: `${start.toISOString()}/${end.toISOString()}`,
    $filter: "containerName eq '*'",
  });
  const url = `${
    endpoint.replace(/\/$/, "")
  }${groupId}/providers/Microsoft.Insights/metrics?${query}`;
  let body: { value?: Metric[] };
  try {
    const response = await client.sendRequest(
      createPipelineRequest({ url, method: "GET", abortSignal: options.signal }),
    );
    if (response.status !== 200) {
      throw Object.assign(new Error(response.bodyAsText ?? `HTTP ${response.status}`), {
        statusCode: response.status,
      });
    }
    body = JSON.parse(response.bodyAsText ?? "{}");
  } catch (err) {
    throw aciError(`reading the Azure Monitor metrics of ${groupId}`, err);
  }
  return usageOf(body.value ?? []);
}

/** The documented response's metrics as each container's newest minute with a value. */
export function usageOf(metrics: Metric[]): Map<string, ContainerUsage> {
  const out = new Map<string, ContainerUsage>();
  for (const metric of metrics) {
    const field = metric.name.value === "CpuUsage"
      ? "cpuMillicores"
      : metric.name.value === "MemoryUsage"
      ? "memoryBytes"
      : undefined;
    if (!field) continue;
    for (const series of metric.timeseries ?? []) {
      const container = series.metadatavalues?.find((m) =>
        m.name.value.toLowerCase() === "containername"
      )?.value;
      const newest = (series.data ?? []).filter((d) => typeof d.average === "number").at(-1);
      if (!container || !newest) continue;
      const usage = out.get(container) ?? { atMs: Date.parse(newest.timeStamp) };
      usage.atMs = Math.max(usage.atMs, Date.parse(newest.timeStamp));
      usage[field] = newest.average;
      out.set(container, usage);
    }
  }
  return out;
}
