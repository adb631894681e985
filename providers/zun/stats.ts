/**
 * `/stats/summary` (and so `/metrics/resource`, `kubectl top` and the HPA) for the pods that run
 * as plain Zun containers; a capsule's containers have no stats in Zun (its stats API answers
 * 404 for them, as its logs and exec), so capsule pods are left out.
 *
 * Memory: Zun's container stats (`GET /v1/containers/<uuid>/stats`,
 * zun/container/docker/driver.py `stats`): `MEM USAGE(MiB)` is the engine's usage less the
 * inactive file cache, the kubelet's working set; `MEM LIMIT(MiB)` gives what is available.
 *
 * CPU: Zun's `CPU %` is no rate and no CPU time: it is the container's CPU time divided by the
 * host's whole CPU time since it booted (`cpu_usage.total_usage / system_cpu_usage`), and the
 * divisor is not sent. The CPU time comes instead from Zun's `top`
 * (`GET /v1/containers/<uuid>/top?ps_args=pid,time`; the engine lists the container's processes
 * from the host, no process is started in the container): the sum of its processes' `TIME`, in
 * whole seconds, of the processes alive at that moment. That is what metrics-server needs (a
 * cumulative counter; the rate is its difference between two scrapes), to a second.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  podsSummary,
  type PodStats,
  type RemoteRun,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { ZunHandle } from "./status.ts";
import { mapLimited } from "./client/_limit.ts";
import type { ZunApi } from "./client/zun_api.ts";

/** Zun's stats answer (zun/container/docker/driver.py `stats`). */
interface ZunStatsAnswer {
  "MEM USAGE(MiB)"?: number;
  "MEM LIMIT(MiB)"?: number;
}

/** Zun's top answer: the engine's `Titles` and `Processes`. */
interface ZunTop {
  Titles?: string[];
  Processes?: string[][];
}

/**
 * A process's CPU time in seconds, as podman's ps library prints it (a Go duration: `13s`,
 * `1m5s`, `2h0m1s`) or procps' `ps` (`00:01:05`, `1-02:03:04`); undefined if neither.
 */
export function parseCpuTime(text: string): number | undefined {
  const go = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(text);
  if (go && text) return Number(go[1] ?? 0) * 3600 + Number(go[2] ?? 0) * 60 + Number(go[3] ?? 0);
  const ps = /^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$/.exec(text);
  if (ps) {
    return Number(ps[1] ?? 0) * 86400 + Number(ps[2] ?? 0) * 3600 + Number(ps[3]) * 60 +
      Number(ps[4]);
  }
  return undefined;
}

/** The summed `TIME` column of a top answer, seconds; undefined without one. */
export function cpuSecondsOf(top: ZunTop): number | undefined {
  const column = top.Titles?.findIndex((t) => t.trim().toUpperCase() === "TIME") ?? -1;
  if (column < 0) return undefined;
  let sum = 0;
  for (const row of top.Processes ?? []) {
    const seconds = parseCpuTime((row[column] ?? "").trim());
    if (seconds === undefined) return undefined;
    sum += seconds;
  }
  return sum;
}

/** The `ps_args` that give a `TIME` column: podman's descriptors, then procps' (dockerd). */
const TOP_ARGS = ["pid,time", "-o pid,time"];

/** Reads Zun's stats of the node's plain-container pods; see the module doc. */
export class ZunStats {
  readonly #api: ZunApi;
  readonly #node: { nodeName: string; startMs: number };
  readonly #clock: { now(): number };
  /** The `ps_args` this Zun's engine took, once one did. */
  #topArgs?: string;

  /** Stats of the node `deps.nodeName`, started now. */
  constructor(api: ZunApi, deps: { nodeName: string; clock: { now(): number } }) {
    this.#api = api;
    this.#node = { nodeName: deps.nodeName, startMs: deps.clock.now() };
    this.#clock = deps.clock;
  }

  /** The CPU seconds of the container's live processes, or undefined when top answers none. */
  async #cpuSeconds(uuid: string, signal?: AbortSignal): Promise<number | undefined> {
    for (const args of this.#topArgs ? [this.#topArgs] : TOP_ARGS) {
      const query = new URLSearchParams({ ps_args: args });
      const top = await this.#api.call<ZunTop>("GET", `/containers/${uuid}/top?${query}`, {
        signal,
      }).then((a) => a.body, () => undefined);
      const seconds = top && cpuSecondsOf(top);
      if (seconds !== undefined) {
        this.#topArgs = args;
        return seconds;
      }
    }
    return undefined;
  }

  /** One pod's stats, or undefined when Zun answers neither stats nor top. */
  async podStats(
    pod: Pod,
    uuid: string,
    startTimeMs: number,
    signal?: AbortSignal,
  ): Promise<PodStats | undefined> {
    const [stats, cpuSeconds] = await Promise.all([
      this.#api.call<ZunStatsAnswer>("GET", `/containers/${uuid}/stats`, { signal })
        .then((a) => a.body, () => undefined),
      this.#cpuSeconds(uuid, signal),
    ]);
    const usedMiB = stats?.["MEM USAGE(MiB)"];
    if (usedMiB === undefined || cpuSeconds === undefined) return undefined;
    const time = new Date().toISOString();
    const startTime = new Date(startTimeMs).toISOString();
    const workingSetBytes = Math.round(usedMiB * 1024 * 1024);
    const limitMiB = stats?.["MEM LIMIT(MiB)"];
    const memory = {
      time,
      workingSetBytes,
      usageBytes: workingSetBytes,
      ...(limitMiB !== undefined
        ? { availableBytes: Math.max(0, Math.round(limitMiB * 1024 * 1024) - workingSetBytes) }
        : {}),
    };
    // TIME counts whole seconds: an idle container reads 0 (the kit's metricsText keeps such a
    // pod in metrics-server's view).
    const cpu = { time, usageCoreNanoSeconds: cpuSeconds * 1e9 };
    const { namespace = "", name = "", uid = "" } = pod.metadata ?? {};
    return {
      podRef: { namespace, name, uid },
      startTime,
      containers: [{ name: pod.spec?.containers[0]?.name ?? "", startTime, cpu, memory }],
      cpu,
      memory,
    };
  }

  /** The summary of the node's running plain-container pods; the node adds them up. */
  async summary(
    running: { pod: Pod; run: RemoteRun<ZunHandle>; startTimeMs: number }[],
    signal?: AbortSignal,
  ): Promise<StatsSummary> {
    const plain = running.filter(({ run }) => run.handle?.kind === "container");
    const pods = (await mapLimited(
      plain,
      8,
      ({ pod, run, startTimeMs }) => this.podStats(pod, run.handle!.uuid, startTimeMs, signal),
    )).filter((p): p is PodStats => p !== undefined);
    return podsSummary(this.#node, this.#clock.now(), pods);
  }
}
