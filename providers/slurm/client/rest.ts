/**
 * The SLURM client through slurmrestd: on a unix socket with `rest_auth/local` (jobs run as the user
 * slurmrestd runs as), or on a URL with a JWT (`X-SLURM-USER-NAME`, `X-SLURM-USER-TOKEN`). The
 * API version is the newest of {@link SUPPORTED_VERSIONS} that its OpenAPI document lists.
 * @module
 */
import { InvalidInputError, TransientError } from "../../../provider/mod.ts";
import {
  type JobInfo,
  type JobRequest,
  parseJobs,
  parsePartitions,
  type PartitionInfo,
  type SlurmClient,
} from "./slurm_client.ts";
import type { SlurmConfig } from "../config.ts";

/** API versions whose job, submit and partition shapes this client speaks, newest first. */
export const SUPPORTED_VERSIONS = ["v0.0.38", "v0.0.37"];

/** sbatch option names whose slurmrestd field is not the name with `_` for `-`. */
const FIELD_NAMES: Record<string, string> = {
  constraint: "constraints",
  mem: "memory_per_node",
  "mem-per-cpu": "memory_per_cpu",
  nodelist: "required_nodes",
  ntasks: "tasks",
  "ntasks-per-node": "tasks_per_node",
  time: "time_limit",
};

type RestOptions = NonNullable<SlurmConfig["rest"]>;

/** Talks to slurmrestd; see the module doc. */
export class RestClient implements SlurmClient {
  readonly #base: string;
  readonly #client?: Deno.HttpClient;
  readonly #headers: () => Promise<Record<string, string>>;
  #version?: string;

  get kind(): string {
    return `rest ${this.#version ?? "(version not yet known)"}`;
  }

  readonly #lister?: Pick<SlurmClient, "jobs">;

  /**
   * `lister`: lists the jobs instead of `GET /jobs` (which has no filter in v0.0.38 and answers
   * with the whole cluster): the CLI's squeue filtered to this node's users, when configured.
   */
  constructor(options: RestOptions, lister?: Pick<SlurmClient, "jobs">) {
    this.#lister = lister;
    this.#version = options.version;
    if (options.socket) {
      this.#client = Deno.createHttpClient({ proxy: { transport: "unix", path: options.socket } });
      this.#base = "http://slurmrestd";
      this.#headers = () => Promise.resolve({});
    } else {
      this.#base = options.url!.replace(/\/$/, "");
      this.#headers = async (): Promise<Record<string, string>> => {
        if (!options.user || !options.tokenFile) return {};
        const token = (await Deno.readTextFile(options.tokenFile)).trim();
        return { "X-SLURM-USER-NAME": options.user, "X-SLURM-USER-TOKEN": token };
      };
    }
  }

  async submit(job: JobRequest, options: { signal?: AbortSignal }): Promise<number> {
    const body = { script: job.script, job: jobFields(job) };
    const answer = await this.#call("POST", "job/submit", options.signal, body);
    const id = Number((answer as { job_id?: number }).job_id);
    if (!Number.isInteger(id) || id <= 0) throw new TransientError("slurmrestd gave no job_id");
    return id;
  }

  async jobs(options: { signal?: AbortSignal }): Promise<JobInfo[]> {
    if (this.#lister) return await this.#lister.jobs(options);
    return parseJobs(await this.#call("GET", "jobs", options.signal));
  }

  async cancel(id: number, options: { signal?: AbortSignal }): Promise<void> {
    try {
      await this.#call("DELETE", `job/${id}`, options.signal);
    } catch (err) {
      // A job slurmctld no longer knows, or one already finished, is cancelled enough.
      if (/Invalid job id|already completed|Job\/step already completing/i.test(String(err))) {
        return;
      }
      throw err;
    }
  }

  async ping(options: { signal?: AbortSignal }): Promise<void> {
    const answer = await this.#call("GET", "ping", options.signal) as {
      pings?: { ping?: string }[];
    };
    if (!answer.pings?.some((p) => p.ping === "UP")) {
      throw new TransientError("slurmctld does not answer slurmrestd's ping");
    }
  }

  async partitions(options: { signal?: AbortSignal }): Promise<PartitionInfo[]> {
    return parsePartitions(await this.#call("GET", "partitions", options.signal));
  }

  close(): void {
    this.#client?.close();
  }

  /** The API version: the configured one, else the newest supported one `/openapi` lists. */
  async #discover(signal?: AbortSignal): Promise<string> {
    if (this.#version) return this.#version;
    const doc = await this.#fetchJson("GET", "/openapi", signal) as { paths?: object };
    const paths = Object.keys(doc.paths ?? {});
    const found = SUPPORTED_VERSIONS.find((v) => paths.includes(`/slurm/${v}/job/submit`));
    if (!found) {
      const offered = [...new Set(paths.map((p) => /^\/slurm\/(v[\d.]+)\//.exec(p)?.[1]))]
        .filter(Boolean);
      throw new InvalidInputError(
        `slurmrestd offers API versions ${
          offered.join(", ") || "(none)"
        }, none of which this provider speaks (${
          SUPPORTED_VERSIONS.join(", ")
        }); start slurmrestd with -s openapi/v0.0.38 or set rest.version`,
      );
    }
    return this.#version = found;
  }

  async #call(method: string, path: string, signal?: AbortSignal, body?: unknown) {
    const version = await this.#discover(signal);
    return this.#fetchJson(method, `/slurm/${version}/${path}`, signal, body);
  }

  async #fetchJson(method: string, path: string, signal?: AbortSignal, body?: unknown) {
    let response: Response;
    try {
      response = await fetch(`${this.#base}${path}`, {
        method,
        signal,
        client: this.#client,
        headers: { ...await this.#headers(), "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new TransientError(`slurmrestd cannot be reached: ${String(err)}`, { cause: err });
    }
    const text = await response.text();
    let parsed: { errors?: { error?: string; description?: string }[] };
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new TransientError(
        `slurmrestd answered ${method} ${path} with HTTP ${response.status}: ${text.slice(0, 200)}`,
      );
    }
    const errors = (parsed.errors ?? []).map((e) => e.description || e.error).filter(Boolean);
    if (!response.ok || errors.length > 0) {
      const why = errors.join("; ") || `HTTP ${response.status}`;
      const Kind = response.status === 400 || /invalid|unknown/i.test(why)
        ? InvalidInputError
        : TransientError;
      throw new Kind(`slurmrestd refused ${method} ${path}: ${why}`);
    }
    return parsed;
  }
}

/** The submit request's `job` object for a {@link JobRequest}. */
export function jobFields(job: JobRequest): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    name: job.name,
    comment: job.comment,
    current_working_directory: job.workDir,
    standard_output: job.output,
    standard_error: job.output,
    // The batch script sets each container's env itself; this is only the script's own.
    environment: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: job.workDir },
  };
  if (job.cpusPerTask !== undefined) fields.cpus_per_task = job.cpusPerTask;
  if (job.memoryMiB !== undefined) fields.memory_per_node = job.memoryMiB;
  if (job.timeLimitMinutes !== undefined) fields.time_limit = job.timeLimitMinutes;
  for (const [option, value] of Object.entries(job.options)) {
    const field = FIELD_NAMES[option] ?? option.replaceAll("-", "_");
    fields[field] = value === "" ? true : /^\d+$/.test(value) ? Number(value) : value;
    // `nodes` is a [min, max] pair in the API; `2` or `1-2` in sbatch.
    if (option === "nodes") {
      const [min, max = min] = value.split("-").map(Number);
      fields.nodes = [min, max];
    }
  }
  return fields;
}
