/**
 * Tasks' CPU and memory from CloudWatch: Container Insights' task metrics `CpuUtilized` (CPU
 * units, 1,024 a vCPU) and `MemoryUtilized` (MiB) in the `ECS/ContainerInsights` namespace, by
 * the dimensions `ClusterName` and `TaskDefinitionFamily` — which name one pod, each pod having a
 * family of its own (`../names.ts`). `cloudwatch:GetMetricData`, 500 queries (250 pods) a call,
 * through the ECS calls' back-off on throttling; the newest period's average of each.
 * @module
 */
import {
  type CloudWatchClient,
  GetMetricDataCommand,
  type MetricDataQuery,
} from "@aws-sdk/client-cloudwatch";
import { awsError } from "./aws.ts";
import type { Throttle } from "./throttle.ts";

/** Container Insights' namespace. */
export const INSIGHTS_NAMESPACE = "ECS/ContainerInsights";
/** GetMetricData takes at most this many queries a call. */
const QUERIES_PER_CALL = 500;

/** One task's usage: the newest period's averages. */
export interface TaskUsage {
  /** CPU units (1,024 a vCPU). */
  cpuUnits?: number;
  /** MiB. */
  memoryMiB?: number;
}

/** What {@link readTaskUsage} needs. */
export interface TaskUsageOptions {
  cluster: string;
  /** The period in seconds (1, 5, 10, 30 for high-resolution metrics, or a multiple of 60). */
  periodSeconds: number;
  /** Now, in ms. */
  nowMs: number;
  throttle: Throttle;
  signal?: AbortSignal;
}

/** The usage of each task definition family's task, by family; families without data left out. */
export async function readTaskUsage(
  client: CloudWatchClient,
  families: string[],
  options: TaskUsageOptions,
): Promise<Map<string, TaskUsage>> {
  const { cluster, periodSeconds, nowMs } = options;
  const queries: MetricDataQuery[] = families.flatMap((family, i) =>
    (["CpuUtilized", "MemoryUtilized"] as const).map((metric) => ({
      Id: `${metric === "CpuUtilized" ? "c" : "m"}${i}`,
      MetricStat: {
        Metric: {
          Namespace: INSIGHTS_NAMESPACE,
          MetricName: metric,
          Dimensions: [
            { Name: "ClusterName", Value: cluster },
            { Name: "TaskDefinitionFamily", Value: family },
          ],
        },
        Period: periodSeconds,
        Stat: "Average",
      },
    }))
  );
  const usage = new Map<string, TaskUsage>();
  // Three periods back: the newest full one is there even when the last is still empty.
  const start = new Date(nowMs - 3 * periodSeconds * 1000);
  for (let at = 0; at < queries.length; at += QUERIES_PER_CALL) {
    let token: string | undefined;
    do {
      const out = await options.throttle.run(
        () =>
          client.send(
            new GetMetricDataCommand({
              MetricDataQueries: queries.slice(at, at + QUERIES_PER_CALL),
              StartTime: start,
              EndTime: new Date(nowMs),
              ScanBy: "TimestampDescending",
              NextToken: token,
            }),
            { abortSignal: options.signal },
          ),
        options.signal,
      ).catch((err) => {
        throw awsError("CloudWatch GetMetricData", err);
      });
      for (const result of out.MetricDataResults ?? []) {
        const value = result.Values?.[0];
        const i = Number(result.Id?.slice(1));
        if (value === undefined || !families[i]) continue;
        const entry = usage.get(families[i]) ?? {};
        if (result.Id?.startsWith("c")) entry.cpuUnits = value;
        else entry.memoryMiB = value;
        usage.set(families[i], entry);
      }
      token = out.NextToken;
    } while (token);
  }
  return usage;
}
