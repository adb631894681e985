/**
 * `/stats/summary` and `/metrics/resource` for the aci node from Azure Monitor
 * (`./client/monitor.ts`): each running group's containers' newest one-minute averages of
 * `CpuUsage` and `MemoryUsage`. Azure Monitor keeps one value a minute, so a group is read again
 * only once its last read is `metricsInterval` old (default 60 s) — longer when that would take
 * more than a tenth of the ARM read budget (at 1,000 pods and 20 reads a second: every 500 s) —
 * and a summary does not wait for more than 2 s of reads: it answers with what it has while the
 * rest are read for the next. metrics-server needs a
 * cumulative CPU counter: each container's is the CPU time its averages add up to, counted from
 * its first sample (a rate × time integral, so `kubectl top` shows the average Azure reported).
 * A pod without a sample yet is left out, as metrics-server leaves out a pod it cannot rate.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Clock,
  type ContainerStats,
  type Logger,
  podsSummary,
  type PodStats,
  type RemoteRun,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { ContainerGroup } from "./azure.ts";
import type { ContainerUsage } from "./client/monitor.ts";

/** What {@link AciUsage} needs. */
export interface AciUsageDeps {
  /** A group's containers' newest minute, by container name. */
  read(groupId: string, signal?: AbortSignal): Promise<Map<string, ContainerUsage>>;
  clock: Clock;
  log: Logger;
  /** How old a group's last read may get before it is read again, ms. */
  refreshMs: number;
  /** The ARM read budget's reads a second: these reads take at most a tenth of it. */
  readsPerSecond: number;
}

/** A running pod as the kit lists it. */
export interface RunningPod {
  pod: Pod;
  run: RemoteRun<ContainerGroup>;
  startTimeMs: number;
}

/** How long a summary waits for reads. */
const WAIT_MS = 2000;
/** Groups read at once. */
const READS_AT_ONCE = 4;

/** The node's usage from Azure Monitor; see the module doc. */
export class AciUsage {
  readonly #d: AciUsageDeps;
  readonly #samples = new Map<string, { readAtMs: number; usage: Map<string, ContainerUsage> }>();
  /** CPU core-nanoseconds so far, by `uid/container`, and when counted to. */
  readonly #cpu = new Map<string, { atMs: number; coreNs: number }>();
  #refreshing?: Promise<void>;
  #tokens = 10;
  #tokensAtMs = -Infinity;

  constructor(deps: AciUsageDeps) {
    this.#d = deps;
  }

  /** The summary for `running`, reading the groups whose figures are old (see the module doc). */
  async summary(
    nodeName: string,
    startMs: number,
    running: RunningPod[],
    signal?: AbortSignal,
  ): Promise<StatsSummary> {
    const live = new Set(running.map((r) => r.pod.metadata?.uid ?? ""));
    for (const uid of this.#samples.keys()) if (!live.has(uid)) this.#samples.delete(uid);
    for (const key of this.#cpu.keys()) if (!live.has(key.split("/")[0])) this.#cpu.delete(key);
    this.#refreshing ??= this.#refresh(running, signal).finally(() => this.#refreshing = undefined);
    const waited = AbortSignal.any([AbortSignal.timeout(WAIT_MS), ...(signal ? [signal] : [])]);
    await Promise.race([
      this.#refreshing,
      new Promise((resolve) => waited.addEventListener("abort", resolve, { once: true })),
    ]);
    const nowMs = this.#d.clock.now();
    const pods = running.flatMap((r) => {
      const stats = this.#podStats(r, nowMs);
      return stats ? [stats] : [];
    });
    return podsSummary({ nodeName, startMs }, nowMs, pods);
  }

  async #refresh(running: RunningPod[], signal?: AbortSignal): Promise<void> {
    const nowMs = this.#d.clock.now();
    // At most a tenth of the read budget: the pods' status reads come first.
    const shareMs = (running.length * 1000) / (0.1 * this.#d.readsPerSecond);
    const refreshMs = Math.max(this.#d.refreshMs, shareMs);
    // Tokens at that tenth, 10 at most: a rollout's new pods are not read all at once either.
    const rate = 0.1 * this.#d.readsPerSecond;
    this.#tokens = Math.min(10, this.#tokens + ((nowMs - this.#tokensAtMs) / 1000) * rate);
    this.#tokensAtMs = nowMs;
    const stale = running.filter((r) => {
      const last = this.#samples.get(r.pod.metadata?.uid ?? "");
      return r.run.handle?.id && (!last || nowMs - last.readAtMs >= refreshMs);
    }).slice(0, Math.floor(this.#tokens));
    this.#tokens -= stale.length;
    let next = 0;
    const worker = async () => {
      while (next < stale.length && !signal?.aborted) {
        const { pod, run } = stale[next++];
        await this.#d.read(run.handle!.id!, signal).then(
          (usage) =>
            this.#samples.set(pod.metadata?.uid ?? "", { readAtMs: this.#d.clock.now(), usage }),
          (err) =>
            this.#d.log.warning("cannot read the Azure Monitor metrics of {group}: {err}", {
              group: run.handle?.name,
              err: String(err),
            }),
        );
      }
    };
    await Promise.all(Array.from({ length: READS_AT_ONCE }, worker));
  }

  #podStats({ pod, startTimeMs }: RunningPod, nowMs: number): PodStats | undefined {
    const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
    const sample = this.#samples.get(uid);
    if (!sample || sample.usage.size === 0) return undefined;
    const time = new Date(nowMs).toISOString();
    const startTime = new Date(startTimeMs).toISOString();
    const containers = [...sample.usage].map(([container, usage]): ContainerStats => ({
      name: container,
      startTime,
      cpu: usage.cpuMillicores === undefined ? undefined : {
        time,
        usageNanoCores: Math.round(usage.cpuMillicores * 1e6),
        usageCoreNanoSeconds: this.#cpuTime(`${uid}/${container}`, usage.cpuMillicores, nowMs),
      },
      memory: usage.memoryBytes === undefined
        ? undefined
        : { time, usageBytes: usage.memoryBytes, workingSetBytes: usage.memoryBytes },
    }));
    const sum = (f: (c: ContainerStats) => number | undefined) =>
      containers.reduce((n, c) => n + (f(c) ?? 0), 0);
    return {
      podRef: { namespace, name, uid },
      startTime,
      containers,
      cpu: {
        time,
        usageNanoCores: sum((c) => c.cpu?.usageNanoCores),
        usageCoreNanoSeconds: sum((c) => c.cpu?.usageCoreNanoSeconds),
      },
      memory: {
        time,
        usageBytes: sum((c) => c.memory?.usageBytes),
        workingSetBytes: sum((c) => c.memory?.workingSetBytes),
      },
    };
  }

  /** The container's CPU counter at `nowMs`, running at `millicores` since it was last counted. */
  #cpuTime(key: string, millicores: number, nowMs: number): number {
    const counter = this.#cpu.get(key) ?? { atMs: nowMs, coreNs: 0 };
    counter.coreNs += Math.round((millicores / 1000) * (nowMs - counter.atMs) * 1e6);
    counter.atMs = nowMs;
    this.#cpu.set(key, counter);
    return counter.coreNs;
  }
}
