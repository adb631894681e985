/**
 * `/stats/summary` from `sstat`: one call for every running job of the node (at most one per
 * `statsInterval`, shared by every request), read per step — each container's step ID is in its
 * `state/NAME.RUN.step` file. CPU comes as cumulative time (`TRESUsageInTot` cpu, whole seconds)
 * and its rate from two calls at least 10 s apart (whole seconds would make a rate over one
 * second 0 or 1 core), as the kubelet's summary takes usageNanoCores from two cumulative samples (kubernetes/kubernetes pkg/kubelet/stats/cri_stats_provider.go,
 * getAndUpdateContainerUsageNanoCores); the first call gives the average since the step
 * started. Memory is the step's current resident set (`TRESUsageInTot` mem), as working set and
 * RSS. A running container never reports zero (metrics-server drops a pod when one does:
 * kubernetes-sigs/metrics-server pkg/scraper/client/resource/decode.go). slurmrestd has no
 * step statistics, so this needs the `cli` config (sstat on vkubelet's host).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Clock,
  type ContainerStats,
  NotSupportedError,
  type PodStats,
  raceSignal,
  type RemoteRun,
  type StatsSummary,
} from "../../provider/mod.ts";
import { type CommandRunner, commandRunner } from "./client/cli.ts";
import type { SlurmConfig } from "./config.ts";
import type { SlurmHandle } from "./status.ts";

/** One step's usage in an sstat answer. */
export interface StepUsage {
  /** Cumulative CPU time, in core-nanoseconds. */
  cpuNs: number;
  /** Current resident memory of the step's tasks, in bytes. */
  memoryBytes: number;
}

/** One sstat call: usage by `JOB.STEP`, and CPU rates (nanocores) since an earlier call. */
export interface StepSample {
  atMs: number;
  steps: Map<string, StepUsage>;
  rates: Map<string, number>;
}

/** `[D-]HH:MM:SS`, `MM:SS.mmm` or `SS.mmm` (SLURM's elapsed time) in milliseconds. */
export function parseSlurmTime(text: string): number | undefined {
  const m = /^(?:(\d+)-)?(?:(\d+):)?(?:(\d+):)?(\d+(?:\.\d+)?)$/.exec(text.trim());
  if (!m) return undefined;
  const [days, a, b, seconds] = [m[1], m[2], m[3], m[4]].map((v) => Number(v ?? 0));
  // With two colons the fields are hours, minutes; with one, minutes only.
  const [hours, minutes] = m[3] !== undefined ? [a, b] : [0, a];
  return Math.round((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000);
}

/** SLURM's memory figure (`52132K`, `1.50M`, `2G`, or bytes without a suffix) in bytes. */
export function parseSlurmBytes(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([KMGTP]?)$/.exec(text.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * 1024 ** " KMGTP".indexOf(m[2] || " "));
}

/** Parses `sstat --noheader --parsable2 --format=JobID,TRESUsageInTot` lines by `JOB.STEP`. */
export function parseSstat(text: string): Map<string, StepUsage> {
  const out = new Map<string, StepUsage>();
  for (const line of text.split("\n")) {
    const [id, tres] = line.trim().split("|");
    // Only numbered steps are containers (not `.batch` or `.extern`).
    if (!/^\d+\.\d+$/.test(id ?? "") || tres === undefined) continue;
    const fields = Object.fromEntries(tres.split(",").map((kv) => kv.split("=", 2)));
    const cpuMs = parseSlurmTime(fields.cpu ?? "");
    const memoryBytes = parseSlurmBytes(fields.mem ?? "");
    if (cpuMs === undefined || memoryBytes === undefined) continue;
    out.set(id, { cpuNs: cpuMs * 1e6, memoryBytes });
  }
  return out;
}

/** What the sampler needs. */
export interface SstatDeps {
  run: CommandRunner;
  clock: Clock;
  /** At most one sstat per this many ms. */
  intervalMs: number;
}

/** The span CPU rates are taken over, at least (see {@link SstatSampler}). */
export const RATE_WINDOW_MS = 10_000;

/** Runs sstat for all jobs at most once per interval; CPU rates over the last 10 s or more. */
export class SstatSampler {
  readonly #deps: SstatDeps;
  #latest?: StepSample;
  #history: StepSample[] = [];
  #pending?: Promise<StepSample>;

  constructor(deps: SstatDeps) {
    this.#deps = deps;
  }

  /** The latest sample, taken now when the last one is older than the interval. */
  sample(jobIds: number[], signal?: AbortSignal): Promise<StepSample> {
    const now = this.#deps.clock.now();
    if (this.#latest && now - this.#latest.atMs < this.#deps.intervalMs) {
      return Promise.resolve(this.#latest);
    }
    if (jobIds.length === 0) return Promise.resolve(this.#empty(now));
    // One call in flight for every request; its own timeout, not a caller's signal, ends it.
    this.#pending ??= this.#take(jobIds).finally(() => this.#pending = undefined);
    return raceSignal(this.#pending, signal);
  }

  async #take(jobIds: number[]): Promise<StepSample> {
    const args = ["--noheader", "--parsable2", "-a", `--jobs=${jobIds.join(",")}`];
    // sstat exits 0 and names on stderr the jobs it has no steps for.
    const text = await this.#deps.run("sstat", [...args, "--format=JobID,TRESUsageInTot"], {
      signal: AbortSignal.timeout(30_000),
    });
    const atMs = this.#deps.clock.now();
    const steps = parseSstat(text);
    const rates = new Map<string, number>();
    for (const [id, usage] of steps) {
      const from = this.#baseline(id, atMs);
      if (!from) continue;
      rates.set(id, Math.max(0, (usage.cpuNs - from.cpuNs) / ((atMs - from.atMs) / 1000)));
    }
    this.#latest = { atMs, steps, rates };
    this.#history.push(this.#latest);
    this.#history = this.#history.filter((h) => atMs - h.atMs <= RATE_WINDOW_MS * 3);
    return this.#latest;
  }

  /**
   * The earlier sample of step `id` to take its rate from: the newest at least
   * {@link RATE_WINDOW_MS} old, else the oldest kept. sstat gives CPU time in whole seconds, so
   * two samples a second apart would read 0 or 1 core; over 10 s the error is a tenth of a core.
   */
  #baseline(id: string, atMs: number): { atMs: number; cpuNs: number } | undefined {
    const known = this.#history.filter((h) => h.steps.has(id) && h.atMs < atMs);
    const old = known.filter((h) => atMs - h.atMs >= RATE_WINDOW_MS).at(-1) ?? known[0];
    return old && { atMs: old.atMs, cpuNs: old.steps.get(id)!.cpuNs };
  }

  #empty(atMs: number): StepSample {
    this.#latest = { atMs, steps: new Map(), rates: new Map() };
    return this.#latest;
  }
}

/**
 * The node's `/stats/summary` through sstat ({@link SstatSampler}): refused (NotSupportedError)
 * without the cli, as slurmrestd has no step statistics.
 */
export class SlurmStats {
  readonly #sstat?: SstatSampler;
  readonly #node: { name: string; startMs: number };

  constructor(config: SlurmConfig, deps: { clock: Clock; nodeName: string }) {
    const { clock, nodeName } = deps;
    this.#node = { name: nodeName, startMs: clock.now() };
    if (config.cli) {
      const run = commandRunner(config.cli.bin);
      this.#sstat = new SstatSampler({ run, clock, intervalMs: config.statsInterval });
    }
  }

  /** The summary of `runs` (the kit's running pods) whose jobs run. */
  async summary(
    runs: Iterable<{ pod: Pod; run: RemoteRun<SlurmHandle>; startTimeMs: number }>,
    signal?: AbortSignal,
  ): Promise<StatsSummary> {
    if (!this.#sstat) {
      throw new NotSupportedError(
        "stats need sstat on vkubelet's host (slurmrestd has no step statistics): add cli to the slurm provider config (it may sit beside rest)",
      );
    }
    const pods = runningPods(runs);
    const sample = await this.#sstat.sample(pods.map((p) => p.jobId), signal);
    return slurmStatsSummary(this.#node, pods, sample);
  }
}

/** One running container to report: its step's key in the sample, when known. */
export interface ReportedContainer {
  name: string;
  startedMs: number;
  step?: string;
}

/** One pod to report. */
export interface ReportedPod {
  jobId: number;
  podRef: { name: string; namespace: string; uid: string };
  startTimeMs: number;
  containers: ReportedContainer[];
}

/** The pods whose job runs, with their started, not yet exited containers and steps. */
export function runningPods(
  runs: Iterable<{ pod: Pod; run: RemoteRun<SlurmHandle>; startTimeMs: number }>,
): ReportedPod[] {
  const out: ReportedPod[] = [];
  for (const { pod, run, startTimeMs } of runs) {
    const handle = run.handle;
    if (!handle || handle.deleted || handle.job?.state !== "RUNNING") continue;
    const containers: ReportedContainer[] = [];
    for (const c of [...pod.spec?.initContainers ?? [], ...pod.spec?.containers ?? []]) {
      const files = handle.files.get(c.name);
      if (files?.startedMs === undefined || files.exit) continue;
      const step = files.stepId === undefined ? undefined : `${handle.jobId}.${files.stepId}`;
      containers.push({ name: c.name, startedMs: files.startedMs, step });
    }
    const { name = "", namespace = "", uid = "" } = pod.metadata ?? {};
    out.push({ jobId: handle.jobId, podRef: { name, namespace, uid }, startTimeMs, containers });
  }
  return out;
}

/** The `/stats/summary` document for `pods` from `sample`; the node is their sum. */
export function slurmStatsSummary(
  node: { name: string; startMs: number },
  pods: ReportedPod[],
  sample: StepSample,
): StatsSummary {
  const time = new Date(sample.atMs).toISOString();
  const podStats = pods.map((pod): PodStats => {
    const containers = pod.containers.map((c) => containerStats(c, sample, time));
    return {
      podRef: pod.podRef,
      startTime: new Date(pod.startTimeMs).toISOString(),
      containers,
      ...sumOf(containers, time),
    };
  });
  return {
    node: {
      nodeName: node.name,
      startTime: new Date(node.startMs).toISOString(),
      ...sumOf(podStats, time),
    },
    pods: podStats,
  };
}

function containerStats(c: ReportedContainer, sample: StepSample, time: string): ContainerStats {
  const base = { name: c.name, startTime: new Date(c.startedMs).toISOString() };
  const usage = c.step === undefined ? undefined : sample.steps.get(c.step);
  if (!usage) return base;
  const cpuNs = Math.max(usage.cpuNs, 1);
  const bytes = Math.max(usage.memoryBytes, 1);
  const sinceStart = cpuNs / (Math.max(sample.atMs - c.startedMs, 1) / 1000);
  const rate = Math.round(sample.rates.get(c.step!) ?? sinceStart);
  return {
    ...base,
    cpu: { time, usageNanoCores: Math.max(rate, 1), usageCoreNanoSeconds: cpuNs },
    memory: { time, usageBytes: bytes, workingSetBytes: bytes, rssBytes: bytes },
  };
}

/** CPU and memory summed over `parts` that have them; nothing when none has. */
function sumOf(
  parts: { cpu?: ContainerStats["cpu"]; memory?: ContainerStats["memory"] }[],
  time: string,
) {
  const measured = parts.filter((p) => p.cpu && p.memory);
  if (measured.length === 0) return {};
  const sum = (f: (p: (typeof measured)[number]) => number | undefined) =>
    measured.reduce((a, p) => a + (f(p) ?? 0), 0);
  const bytes = sum((p) => p.memory!.workingSetBytes);
  return {
    cpu: {
      time,
      usageNanoCores: sum((p) => p.cpu!.usageNanoCores),
      usageCoreNanoSeconds: sum((p) => p.cpu!.usageCoreNanoSeconds),
    },
    memory: { time, usageBytes: bytes, workingSetBytes: bytes, rssBytes: bytes },
  };
}
