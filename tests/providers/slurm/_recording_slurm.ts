/**
 * Fakes for the slurm provider's unit tests: a SLURM backend that lists given jobs and records
 * what is submitted and cancelled, and a logger that keeps its warnings.
 */
import type { LogProperties } from "../../../provider/mod.ts";
import type {
  JobInfo,
  JobRequest,
  SlurmClient,
} from "../../../providers/slurm/client/slurm_client.ts";

/** Debian's nobody. */
export const NOBODY = { uid: 65534, gid: 65534 };

/**
 * A SLURM that lists `listed` and records what is submitted (listed as RUNNING, as `submitAs`)
 * and cancelled.
 */
export class RecordingSlurm implements SlurmClient {
  readonly kind = "fake";
  readonly cancelled: number[] = [];
  readonly submitted: JobRequest[] = [];
  constructor(readonly listed: JobInfo[], readonly submitAs = NOBODY.uid) {}
  submit(job: JobRequest): Promise<number> {
    this.submitted.push(job);
    const id = 500 + this.submitted.length;
    this.listed.push(running(id, job.comment, this.submitAs));
    return Promise.resolve(id);
  }
  jobs(): Promise<JobInfo[]> {
    return Promise.resolve(structuredClone(this.listed));
  }
  cancel(id: number): Promise<void> {
    this.cancelled.push(id);
    return Promise.resolve();
  }
  ping(): Promise<void> {
    return Promise.resolve();
  }
  partitions() {
    return Promise.resolve([]);
  }
  close(): void {}
}

export function running(id: number, comment: string, userId: number): JobInfo {
  return {
    id,
    state: "RUNNING",
    reason: "None",
    comment,
    exitStatus: 0,
    startMs: Date.now(),
    endMs: 0,
    userId,
  };
}

/** A logger that keeps what was warned. */
export function recordingLog() {
  const warnings: string[] = [];
  const note = (message: string, props?: LogProperties) =>
    warnings.push(message.replace(/\{(\w+)\}/g, (_, k) => String(props?.[k])));
  const quiet = () => {};
  return {
    warnings,
    log: { debug: quiet, info: quiet, warn: note, warning: note, error: note },
  };
}
