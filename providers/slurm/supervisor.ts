/**
 * The status loop: one job listing per interval for all of the node's pods (`squeue --json` or
 * `GET /jobs`), the state files of pods whose job runs or just ended, then the restart policy —
 * a job that ended (its containers exited, or it was cancelled, timed out or lost its node) is
 * submitted again after the kubelet's back-off when the policy says so.
 * @module
 */
import {
  type Clock,
  type Logger,
  planRestart,
  podKeyOf,
  shouldRestartPod,
} from "../../provider/mod.ts";
import type { JobInfo, SlurmBackend } from "./backend.ts";
import type { SlurmConfig } from "./config.ts";
import { jobUserOf } from "./identity.ts";
import { readJobText } from "./job_files.ts";
import { podDirOf } from "./pod_dir.ts";
import { containerReport, jobEnded, type PodRecord, type RunFiles } from "./status.ts";

/** What the loop needs. */
export interface SupervisorDeps {
  backend: SlurmBackend;
  config: SlurmConfig;
  records: Map<string, PodRecord>;
  clock: Clock;
  log: Logger;
  /** Submits the record's next run. */
  submit: (record: PodRecord, signal: AbortSignal) => Promise<void>;
  /** The record's status may have changed. */
  changed: (record: PodRecord) => void;
  /** slurmctld answered (or not) this round. */
  reachable: (ok: boolean) => void;
}

/** One round: list jobs, read files, apply restart policy. Exported for tests. */
export async function superviseOnce(deps: SupervisorDeps, signal: AbortSignal): Promise<void> {
  let jobs: Map<number, JobInfo>;
  try {
    jobs = new Map((await deps.backend.jobs({ signal })).map((j) => [j.id, j]));
    deps.reachable(true);
  } catch (err) {
    if (signal.aborted) throw err;
    deps.reachable(false);
    deps.log.warn("listing SLURM jobs failed: {err}", { err: String(err) });
    return;
  }
  const now = deps.clock.now();
  for (const record of [...deps.records.values()]) {
    if (record.deleting || record.finished) continue;
    if (record.jobId !== undefined) {
      const listed = jobs.get(record.jobId);
      // A job slurmctld no longer lists (purged after MinJobAge, or lost) has ended.
      record.job = listed ?? (record.job && !jobEnded(record.job) ? gone(record) : record.job);
      if (record.job && record.job.state !== "PENDING") {
        await readFiles(deps.config, record, deps.log);
      }
      if (jobEnded(record.job) && record.restartAtMs === undefined) decide(deps, record, now);
    }
    if (record.restartAtMs !== undefined && now >= record.restartAtMs) {
      nextRun(record, now);
      await deps.submit(record, signal).catch((err) => {
        deps.log.warn("resubmitting {pod} failed: {err}", {
          pod: podKeyOf(record.pod),
          err: String(err),
        });
        record.restartAtMs = now + deps.config.restartBackOff.initial;
      });
    }
    deps.changed(record);
  }
}

/** Runs rounds every `statusInterval` until the signal aborts. */
export async function supervise(deps: SupervisorDeps, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      await superviseOnce(deps, signal);
      await deps.clock.sleep(deps.config.statusInterval, signal);
    } catch (err) {
      if (signal.aborted) return;
      deps.log.error("SLURM status round failed: {err}", { err: String(err) });
    }
  }
}

function gone(record: PodRecord): JobInfo {
  return {
    ...(record.job ?? { id: record.jobId!, comment: "", exitStatus: 0, startMs: 0, endMs: 0 }),
    state: "CANCELLED",
    reason: "no longer listed by slurmctld",
  };
}

/**
 * Reads the `started`/`step`/`exit` files of the record's current run: the job's files, so only
 * through `./job_files.ts` (a link, FIFO or device there reads as no file, and is logged once).
 */
export async function readFiles(
  config: SlurmConfig,
  record: PodRecord,
  log?: Logger,
): Promise<void> {
  const dir = `${podDirOf(config, record.pod)}/state`;
  const owner = jobUserOf(config, record.pod.metadata?.namespace);
  const read = async (path: string) => {
    try {
      return await readJobText(path, owner);
    } catch (err) {
      record.refused ??= new Set();
      if (!record.refused.has(path)) {
        log?.warn("{pod}: {err}", { pod: podKeyOf(record.pod), err: String(err) });
        record.refused.add(path);
      }
      return undefined;
    }
  };
  const names = [...(record.pod.spec?.initContainers ?? []), ...(record.pod.spec?.containers ?? [])]
    .map((c) => c.name);
  for (const name of names) {
    const files: RunFiles = record.files.get(name) ?? {};
    if (files.exit) continue;
    const started = await read(`${dir}/${name}.${record.run}.started`);
    if (started) files.startedMs = Number(started.trim());
    if (files.stepId === undefined) {
      const step = await read(`${dir}/${name}.${record.run}.step`);
      if (step && /^\d+$/.test(step.trim())) files.stepId = Number(step.trim());
    }
    const exit = await read(`${dir}/${name}.${record.run}.exit`);
    if (exit) {
      const [code, at] = exit.trim().split(" ").map(Number);
      files.exit = { code, atMs: at };
    }
    record.files.set(name, files);
  }
}

/** The job ended: finish the pod or plan its next run, by restart policy and back-off. */
function decide(deps: SupervisorDeps, record: PodRecord, now: number): void {
  const job = record.job!;
  const regular = (record.pod.spec?.containers ?? []).map((c) => record.files.get(c.name));
  const allSucceeded = job.state === "COMPLETED" && regular.every((f) => f?.exit?.code === 0);
  // activeDeadlineSeconds passed: the kubelet fails the pod and never restarts it
  // (kubernetes/kubernetes pkg/kubelet/active_deadline.go).
  const deadline = job.state === "TIMEOUT" && record.pod.spec?.activeDeadlineSeconds !== undefined;
  if (deadline || !shouldRestartPod(record.pod, [allSucceeded ? 0 : 1])) {
    record.finished = true;
    return;
  }
  // The kit's crash-loop back-off, with the config's numbers (the kubelet's by default).
  const { initial: initialMs, max: maxMs } = deps.config.restartBackOff;
  ({ atMs: record.restartAtMs, entry: record.backoff } = planRestart(record.backoff, now, {
    initialMs,
    maxMs,
  }));
  deps.log.info("SLURM job {job} of {pod} ended {state}; resubmitting after back-off", {
    job: job.id,
    pod: podKeyOf(record.pod),
    state: job.state,
  });
}

/** Moves the current run's terminated states to `lastTerminated` and counts a restart. */
function nextRun(record: PodRecord, now: number): void {
  const names = [...(record.pod.spec?.initContainers ?? []), ...(record.pod.spec?.containers ?? [])]
    .map((c) => c.name);
  for (const name of names) {
    const report = containerReport(record, name, now);
    if ("terminated" in report.state) record.lastTerminated.set(name, report.state.terminated);
  }
  record.run++;
  record.files.clear();
  record.jobId = undefined;
  record.job = undefined;
  record.restartAtMs = undefined;
}
