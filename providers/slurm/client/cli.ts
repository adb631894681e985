/**
 * The SLURM client through SLURM's commands, for vkubelet on a login node: `sbatch` (script on
 * stdin), `squeue --json` (the same job shape as slurmrestd), `scancel`, `sinfo`,
 * `scontrol ping`. The commands run as vkubelet's user, so jobs do too.
 * @module
 */
import { InvalidInputError, TransientError } from "../../../provider/mod.ts";
import {
  addGres,
  type JobInfo,
  type JobRequest,
  parseJobs,
  type PartitionInfo,
  type SlurmClient,
} from "./slurm_client.ts";

/** Runs one SLURM command; its stdout, or an error with its stderr. */
export type CommandRunner = (
  command: string,
  args: string[],
  options: { stdin?: string; signal?: AbortSignal; env?: Record<string, string> },
) => Promise<string>;

/** Runs the command from `bin` (or PATH when empty) with Deno.Command. */
export function commandRunner(bin: string): CommandRunner {
  return async (command, args, { stdin, signal, env }) => {
    const path = bin ? `${bin.replace(/\/$/, "")}/${command}` : command;
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(path, {
        args,
        stdin: stdin === undefined ? "null" : "piped",
        stdout: "piped",
        stderr: "piped",
        signal,
        env,
      }).spawn();
    } catch (err) {
      throw new InvalidInputError(
        `${path} cannot be run (${String(err)}); install SLURM's client commands or set cli.bin`,
      );
    }
    if (stdin !== undefined) {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(stdin));
      await writer.close();
    }
    const out = await child.output();
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success) {
      const err = new TextDecoder().decode(out.stderr).trim();
      const Kind = /invalid|unrecognized|not recognized|unknown/i.test(err)
        ? InvalidInputError
        : TransientError;
      throw new Kind(`${command} ${args[0] ?? ""} failed: ${err || `exit ${out.code}`}`);
    }
    return text;
  };
}

/**
 * squeue's fields for a {@link JobInfo}, `|` after each, the comment last (it may hold a `|`).
 * With `SLURM_TIME_FORMAT=%s` the times are epoch seconds.
 */
const SQUEUE_FIELDS =
  "JobID:|,State:|,Reason:|,UserID:|,ExitCode:|,StartTime:|,EndTime:|,Comment:|";

/** Talks to SLURM through its commands; see the module doc. */
export class CliClient implements SlurmClient {
  readonly kind = "cli";
  readonly #run: CommandRunner;
  readonly #users: number[];

  /**
   * `users`: the uids this node's jobs run as; the job list is only theirs (empty: every job).
   */
  constructor(run: CommandRunner, options: { users?: number[] } = {}) {
    this.#run = run;
    this.#users = [...new Set(options.users ?? [])].sort((a, b) => a - b);
  }

  async submit(job: JobRequest, options: { signal?: AbortSignal }): Promise<number> {
    const out = await this.#run("sbatch", sbatchArgs(job), { stdin: job.script, ...options });
    const id = Number(out.trim().split(";")[0]);
    if (!Number.isInteger(id) || id <= 0) {
      throw new TransientError(`sbatch printed no job ID: ${out.slice(0, 200)}`);
    }
    return id;
  }

  /**
   * The jobs of this node's users, ended ones too (until slurmctld purges them after
   * `MinJobAge`): squeue's text output, because 22.05's `--json` ignores every filter and
   * lists the whole cluster. With one user, slurmctld itself selects the jobs.
   */
  async jobs(options: { signal?: AbortSignal }): Promise<JobInfo[]> {
    if (this.#users.length === 0) {
      return parseJobs(JSON.parse(await this.#run("squeue", ["--all", "--json"], options)));
    }
    const out = await this.#run("squeue", [
      "--noheader",
      "--all",
      "--states=all",
      `--user=${this.#users.join(",")}`,
      "--Format",
      SQUEUE_FIELDS,
    ], { ...options, env: { SLURM_TIME_FORMAT: "%s" } });
    return out.split("\n").filter((line) => line.trim()).map(parseSqueueLine);
  }

  async cancel(id: number, options: { signal?: AbortSignal }): Promise<void> {
    try {
      await this.#run("scancel", [String(id)], options);
    } catch (err) {
      if (/Invalid job id|already completed/i.test(String(err))) return;
      throw err;
    }
  }

  async ping(options: { signal?: AbortSignal }): Promise<void> {
    const out = await this.#run("scontrol", ["ping"], options);
    if (!/ is UP/.test(out)) throw new TransientError(`slurmctld is not up: ${out.trim()}`);
  }

  async partitions(options: { signal?: AbortSignal }): Promise<PartitionInfo[]> {
    const out = await this.#run(
      "sinfo",
      ["--noheader", "--all", "--format=%R|%D|%C|%m|%G"],
      options,
    );
    const byName = new Map<string, PartitionInfo>();
    for (const line of out.split("\n").filter(Boolean)) {
      const [name, nodes, cpus, memory, gres = ""] = line.trim().split("|");
      const p = byName.get(name) ?? { name, cpus: 0, memoryMiB: 0, nodes: 0, gres: {} };
      addGres(p.gres!, gres, Number(nodes) || 0);
      p.nodes += Number(nodes) || 0;
      p.cpus += Number(cpus.split("/")[3]) || 0;
      p.memoryMiB += (Number(memory) || 0) * (Number(nodes) || 0);
      byName.set(name, p);
    }
    return [...byName.values()];
  }

  close(): void {}
}

/** One line of squeue with {@link SQUEUE_FIELDS}. */
export function parseSqueueLine(line: string): JobInfo {
  const [id, state, reason, user, exit, start, end, ...comment] = line.split("|");
  const time = (text: string | undefined) => /^\d+$/.test(text ?? "") ? Number(text) * 1000 : 0;
  return {
    id: Number(id),
    state: (state ?? "UNKNOWN").trim(),
    reason: (reason ?? "None").trim(),
    // The last field's own `|` is the end of the line.
    comment: comment.slice(0, -1).join("|").replace(/^\(null\)$/, ""),
    userId: /^\d+$/.test(user ?? "") ? Number(user) : undefined,
    exitStatus: Number(exit) || 0,
    startMs: time(start),
    endMs: time(end),
  };
}

/** sbatch's arguments for a job (the script comes on stdin). */
export function sbatchArgs(job: JobRequest): string[] {
  const args = [
    "--parsable",
    `--job-name=${job.name}`,
    `--comment=${job.comment}`,
    `--chdir=${job.workDir}`,
    `--output=${job.output}`,
    "--export=NONE",
  ];
  if (job.cpusPerTask !== undefined) args.push(`--cpus-per-task=${job.cpusPerTask}`);
  if (job.memoryMiB !== undefined) args.push(`--mem=${job.memoryMiB}M`);
  if (job.timeLimitMinutes !== undefined) args.push(`--time=${job.timeLimitMinutes}`);
  for (const [option, value] of Object.entries(job.options)) {
    args.push(value === "" ? `--${option}` : `--${option}=${value}`);
  }
  return args;
}
