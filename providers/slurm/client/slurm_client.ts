/**
 * What the provider asks of SLURM, whichever way it talks to it (slurmrestd in `./rest.ts`, the
 * CLI in `./cli.ts`), and the job records both answer with: `squeue --json` and slurmrestd's
 * `GET /jobs` share one shape (SLURM's data_parser), parsed here once.
 * @module
 */

/** A job to submit: the batch script and its sbatch options. */
export interface JobRequest {
  /** The batch script, starting with `#!`. */
  script: string;
  /** Job name (`--job-name`). */
  name: string;
  /** Job comment (`--comment`): carries the pod's identity, for adoption. */
  comment: string;
  /** Working directory of the batch script. */
  workDir: string;
  /** The batch script's own output file. */
  output: string;
  /** `--cpus-per-task`. */
  cpusPerTask?: number;
  /** `--mem` in MiB. */
  memoryMiB?: number;
  /** `--time` in minutes. */
  timeLimitMinutes?: number;
  /** `--partition`, `--account`, `--qos` and any other long option, by name. */
  options: Record<string, string>;
}

/** One job as SLURM lists it. */
export interface JobInfo {
  /** The job ID. */
  id: number;
  /** The base state: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ... */
  state: string;
  /** Why it waits or ended (Resources, Priority, NonZeroExitCode, ...); "None" when none. */
  reason: string;
  /** The job comment. */
  comment: string;
  /**
   * The uid of the user the job runs as (who submitted it, or whom root submitted it for);
   * absent when SLURM's answer has none (such a job is never adopted).
   */
  userId?: number;
  /** The batch script's wait status (exit code << 8, or a signal number). */
  exitStatus: number;
  /** Start and end, in ms since the epoch; 0 when not yet. */
  startMs: number;
  endMs: number;
}

/** A partition's size, for the node's capacity. */
export interface PartitionInfo {
  name: string;
  cpus: number;
  memoryMiB: number;
  nodes: number;
  /** Generic resources by name (`gpu`, `gpu:a100`), summed over the partition's nodes. */
  gres?: Record<string, number>;
}

/** The calls the provider makes; each one takes `{ signal }`. */
export interface SlurmClient {
  /** How it talks to SLURM, for logs and the node's labels (`rest v0.0.38`, `cli`). */
  readonly kind: string;
  /** Submits a job; its ID. */
  submit(job: JobRequest, options: { signal?: AbortSignal }): Promise<number>;
  /** Every job slurmctld still lists (one call for all pods). */
  jobs(options: { signal?: AbortSignal }): Promise<JobInfo[]>;
  /** Cancels a job; resolves when slurmctld accepted it (or the job is already gone). */
  cancel(id: number, options: { signal?: AbortSignal }): Promise<void>;
  /** Rejects unless slurmctld answers. */
  ping(options: { signal?: AbortSignal }): Promise<void>;
  /** The partitions, with their CPUs and memory. */
  partitions(options: { signal?: AbortSignal }): Promise<PartitionInfo[]>;
  /** Releases connections. */
  close(): void;
}

/** Parses the `jobs` array of `squeue --json` or `GET /slurm/v0.0.3x/jobs`. */
export function parseJobs(body: unknown): JobInfo[] {
  const jobs = (body as { jobs?: unknown })?.jobs;
  if (!Array.isArray(jobs)) throw new Error("SLURM's job list has no jobs array");
  return jobs.map((j: Record<string, unknown>) => ({
    id: Number(j.job_id),
    state: baseState(j.job_state),
    reason: String(j.state_reason ?? "None"),
    comment: String(j.comment ?? ""),
    userId: j.user_id === undefined ? undefined : numberOf(j.user_id),
    exitStatus: numberOf(j.exit_code),
    startMs: numberOf(j.start_time) * 1000,
    endMs: numberOf(j.end_time) * 1000,
  }));
}

/** Parses `sinfo --json` nodes or `GET /partitions` into partitions. */
export function parsePartitions(body: unknown): PartitionInfo[] {
  const list = (body as { partitions?: Record<string, unknown>[] })?.partitions;
  if (!Array.isArray(list)) throw new Error("SLURM's partition list has no partitions array");
  return list.map((p) => {
    const tres = Object.fromEntries(
      String(p.tres ?? "").split(",").map((kv) => kv.split("=") as [string, string]),
    );
    return {
      name: String(p.name),
      cpus: numberOf(p.total_cpus) || Number(tres.cpu ?? 0),
      memoryMiB: memoryMiB(tres.mem),
      nodes: numberOf(p.total_nodes),
    };
  });
}

/**
 * Adds one node's `sinfo %G` (`gpu:2`, `gpu:a100:4(S:0-1),mps:100`) times `nodes` to `into`,
 * counted under the plain name and under name:type.
 */
export function addGres(into: Record<string, number>, text: string, nodes: number): void {
  for (const item of text.split(/,(?![^(]*\))/)) {
    const m = /^([a-z][a-z0-9_]*)(?::([^:(]+))?:(\d+)/.exec(item.trim());
    if (!m) continue;
    const count = Number(m[3]) * nodes;
    into[m[1]] = (into[m[1]] ?? 0) + count;
    if (m[2]) into[`${m[1]}:${m[2]}`] = (into[`${m[1]}:${m[2]}`] ?? 0) + count;
  }
}

/** `2000M`, `4G`, `1T` (SLURM's TRES memory) in MiB. */
function memoryMiB(text: string | undefined): number {
  const m = /^(\d+(?:\.\d+)?)([KMGT]?)$/.exec(text ?? "");
  if (!m) return 0;
  const scale = { "": 1, K: 1 / 1024, M: 1, G: 1024, T: 1024 * 1024 }[m[2]] ?? 1;
  return Math.floor(Number(m[1]) * scale);
}

/** Newer data_parser versions give a state list (`["RUNNING", "COMPLETING"]`) or `{number}`s. */
function baseState(state: unknown): string {
  if (Array.isArray(state)) return String(state[0] ?? "UNKNOWN");
  return String(state ?? "UNKNOWN");
}

function numberOf(value: unknown): number {
  if (typeof value === "number") return value;
  if (value && typeof value === "object") {
    const v = value as { number?: number; set?: boolean; return_code?: { number?: number } };
    if (v.return_code) return numberOf(v.return_code);
    return v.set === false ? 0 : Number(v.number ?? 0);
  }
  return Number(value ?? 0) || 0;
}
