/**
 * `/stats/summary` (and through it `/metrics/resource`, which metrics-server reads for `kubectl
 * top` and the HPA) from CloudWatch Container Insights (`./client/metrics.ts`): a running pod's
 * CPU and memory are its task's newest averages. metrics-server wants a cumulative CPU counter per
 * container; CloudWatch gives a rate, so each container's counter adds rate × time since the last
 * summary (from its start, the first time). Container Insights' task metrics do not break down by
 * container: a pod of several containers has its task's usage shared among them by their CPU and
 * memory requests (equally without requests) — the pod's figures, which the HPA uses, are exact.
 * @module
 */
import type { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import type { Task } from "@aws-sdk/client-ecs";
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Clock,
  type ContainerStats,
  podsSummary,
  type PodStats,
  type RemoteRun,
  type StatsSummary,
} from "../../provider/mod.ts";
import { readTaskUsage, type TaskUsage } from "./client/metrics.ts";
import type { Throttle } from "./client/throttle.ts";
import type { FargateConfig } from "./config.ts";
import { familyName } from "./names.ts";
import { containerSize } from "./request/sizing.ts";

/** A running pod as the kit lists it. */
export interface RunningPod {
  pod: Pod;
  run: RemoteRun<Task>;
  startTimeMs: number;
}

/** What {@link TaskStats} needs. */
export interface TaskStatsDeps {
  cloudwatch: CloudWatchClient;
  config: Pick<FargateConfig, "cluster" | "metricsPeriod">;
  throttle: Throttle;
  clock: Pick<Clock, "now">;
  nodeName: string;
}

const MIB = 1024 * 1024;

/** Each container's share of its task's usage, by requests; equal without any. */
function shares(containers: Container[], resource: "cpu" | "memory"): number[] {
  const sizes = containers.map((c, i) => containerSize(c, `spec.containers[${i}]`)[resource]);
  const total = sizes.reduce((a, b) => a + b, 0);
  return sizes.map((s) => total > 0 ? s / total : 1 / containers.length);
}

/** The summary of the node's running pods; see the module doc. */
export class TaskStats {
  readonly #d: TaskStatsDeps;
  /** Each container's cumulative CPU (core-nanoseconds) and when it was last added to. */
  #counters = new Map<string, { coreNanoSeconds: number; atMs: number }>();

  /** When the node started (clock ms). */
  readonly #startMs: number;

  constructor(deps: TaskStatsDeps) {
    this.#d = deps;
    this.#startMs = deps.clock.now();
  }

  /** The node's summary: its running pods with CloudWatch data, and their sum. */
  async summary(running: RunningPod[], signal?: AbortSignal): Promise<StatsSummary> {
    const nowMs = this.#d.clock.now();
    const family = (p: Pod) => familyName(p.metadata?.namespace ?? "", p.metadata?.name ?? "");
    const usage = running.length
      ? await readTaskUsage(this.#d.cloudwatch, running.map((r) => family(r.pod)), {
        cluster: this.#d.config.cluster,
        periodSeconds: this.#d.config.metricsPeriod,
        nowMs,
        throttle: this.#d.throttle,
        signal,
      })
      : new Map<string, TaskUsage>();
    const counters = new Map<string, { coreNanoSeconds: number; atMs: number }>();
    const pods = running.flatMap((r) => {
      const u = usage.get(family(r.pod));
      return u?.cpuUnits === undefined || u.memoryMiB === undefined
        ? []
        : [this.#podStats(r, u as Required<TaskUsage>, nowMs, counters)];
    });
    // Counters of pods that no longer run are dropped.
    this.#counters = counters;
    return podsSummary({ nodeName: this.#d.nodeName, startMs: this.#startMs }, nowMs, pods);
  }

  #podStats(
    { pod, run, startTimeMs }: RunningPod,
    usage: Required<TaskUsage>,
    nowMs: number,
    counters: Map<string, { coreNanoSeconds: number; atMs: number }>,
  ): PodStats {
    const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
    const time = new Date(nowMs).toISOString();
    const specs = pod.spec?.containers ?? [];
    const cpuShares = shares(specs, "cpu");
    const memoryShares = shares(specs, "memory");
    const nanoCores = usage.cpuUnits / 1024 * 1e9;
    const bytes = usage.memoryMiB * MIB;
    const containers = specs.flatMap((c, i): ContainerStats[] => {
      const state = run.containers[c.name]?.state;
      if (!state || !("running" in state)) return [];
      const rate = nanoCores * cpuShares[i];
      const key = `${uid}/${c.name}`;
      const last = this.#counters.get(key) ??
        { coreNanoSeconds: 0, atMs: state.running.startedAtMs };
      const counter = {
        coreNanoSeconds: last.coreNanoSeconds + rate * Math.max(0, nowMs - last.atMs) / 1000,
        atMs: nowMs,
      };
      counters.set(key, counter);
      const memory = Math.round(bytes * memoryShares[i]);
      return [{
        name: c.name,
        startTime: new Date(state.running.startedAtMs).toISOString(),
        cpu: {
          time,
          usageNanoCores: Math.round(rate),
          usageCoreNanoSeconds: Math.round(counter.coreNanoSeconds),
        },
        memory: { time, usageBytes: memory, workingSetBytes: memory },
      }];
    });
    const total = (f: (c: ContainerStats) => number | undefined) =>
      containers.reduce((n, c) => n + (f(c) ?? 0), 0);
    return {
      podRef: { namespace, name, uid },
      startTime: new Date(startTimeMs).toISOString(),
      containers,
      cpu: {
        time,
        usageNanoCores: total((c) => c.cpu?.usageNanoCores),
        usageCoreNanoSeconds: total((c) => c.cpu?.usageCoreNanoSeconds),
      },
      memory: {
        time,
        usageBytes: total((c) => c.memory?.usageBytes),
        workingSetBytes: total((c) => c.memory?.workingSetBytes),
      },
    };
  }
}
