/**
 * SLURM as the kit's remote backend: a pod's run is one batch job (its handle, ./status.ts: the
 * job as last listed and the run's state files). The kit's RemotePods adopts, polls, restarts
 * with back-off and notifies; this file holds what is SLURM's: adoption only of a job whose
 * comment vkubelet signed for this node, that runs as the pod's user and whose `pod.json` is the
 * pod the comment names (./ownership/adoption.ts); one job listing per round for every pod (`squeue --json`
 * or `GET /jobs`) with the state files of each pod's run — the job's files, read only through
 * ./ownership/job_files.ts — the pod directory written on the first run, and the job submitted with the
 * run's number and a signed comment, cancelled on deletion.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type Clock,
  type ContainerLogOptions,
  type Logger,
  NotFoundError,
  podKeyOf,
  type ProviderDeps,
  type ProviderKubeClient,
  type RemoteBackend,
  type RemoteLogRuns,
  type RemoteMakeOptions,
  type RemoteProviderSetup,
  type RemoteRead,
  type RemoteRun,
  type TerminatedReport,
} from "../../provider/mod.ts";
import type { JobInfo, SlurmClient } from "./client/slurm_client.ts";
import type { SlurmConfig } from "./config.ts";
import { adoptableJob } from "./ownership/adoption.ts";
import { loadCommentKey } from "./ownership/comment_key.ts";
import { jobUserOf } from "./ownership/identity.ts";
import { JobCommentKey } from "./ownership/job_comment.ts";
import { jobFileSize, readJobText } from "./ownership/job_files.ts";
import { jobRequestFor } from "./request/job_request.ts";
import { withTunnelAgent, writeAgentCredential } from "./request/tunnel_agent.ts";
import { readLogFile } from "./streams/logs.ts";
import { podDirOf, removePodDir, writePodDir } from "./request/pod_dir.ts";
import {
  deletedEnds,
  initEndsOf,
  jobEnded,
  type RunFiles,
  runOf,
  type SlurmHandle,
} from "./status.ts";

/** What {@link SlurmJobs} needs. */
export interface SlurmJobsDeps {
  slurm: SlurmClient;
  config: SlurmConfig;
  kube?: ProviderKubeClient;
  nodeName: string;
  /** The node's IP: every pod's IP (a job shares its node's network). */
  hostIP: string;
  clock: Clock;
  log: Logger;
  /** Ends log follows when vkubelet stops. */
  signal: AbortSignal;
  /**
   * The key that signs and checks job comments (./ownership/comment_key.ts `loadCommentKey`), asked for
   * when first needed; a failure is asked again next time. Absent: a key of this instance alone
   * (tests), so that no restarted instance adopts its jobs.
   */
  commentKey?: () => Promise<JobCommentKey>;
}

/**
 * How the slurm provider runs its pods on the kit: {@link SlurmJobs} on `slurm`, signing with the
 * node's comment key, and the kit's options for SLURM.
 */
export function slurmJobsSetup(
  config: SlurmConfig,
  deps: ProviderDeps & { slurm: SlurmClient; signal: AbortSignal },
): RemoteProviderSetup<SlurmHandle, SlurmJobs> {
  const { slurm } = deps;
  return {
    backend: new SlurmJobs({
      ...deps,
      config,
      hostIP: deps.internalIp,
      commentKey: () => loadCommentKey(config),
    }),
    intervalMs: config.statusInterval,
    // The job runs no hooks; the kit runs them through exec (a step of the job, by srun),
    // which needs the cli.
    hooks: config.cli ? "exec" : "refuse",
    hooksRefused:
      "the kit runs hooks through exec, which needs srun on vkubelet's host: add cli to the slurm provider config",
    backoff: { initialMs: config.restartBackOff.initial, maxMs: config.restartBackOff.max },
    // Until slurmctld lists the jobs, none is submitted again nor a pod listed as gone.
    retryList: true,
    // Every pod's IP is the node's, between runs too.
    keepPodIP: true,
    closeClient: () => slurm.close(),
  };
}

/** SLURM jobs for RemotePods; see the module doc. */
export class SlurmJobs implements RemoteBackend<SlurmHandle> {
  readonly #d: SlurmJobsDeps;
  /**
   * When each pod started, by uid: a later run's time limit is what is left of its
   * activeDeadlineSeconds (./request/job_request.ts).
   */
  readonly #started = new Map<string, number>();
  /** Each pod's latest run, by uid: how its init containers ended, for the next run's status. */
  readonly #latest = new Map<string, SlurmHandle>();
  #key?: Promise<JobCommentKey>;

  constructor(deps: SlurmJobsDeps) {
    this.#d = deps;
  }

  /**
   * This node's jobs, oldest first: those whose comment vkubelet signed for this node and that
   * run as the pod's user; the pod is the one saved in its directory. Any other job commented for
   * this node is logged and left alone: neither adopted nor, as an orphan, cancelled.
   */
  async list(signal: AbortSignal): Promise<RemoteRun<SlurmHandle>[]> {
    const { clock } = this.#d;
    const runs: RemoteRun<SlurmHandle>[] = [];
    const jobs = await this.#d.slurm.jobs({ signal });
    for (const job of jobs.sort((a, b) => a.id - b.id)) {
      if (!job.comment.startsWith("vkubelet ")) continue;
      const adopted = await adoptableJob(job, { ...this.#d, key: await this.#commentKey() });
      if (!adopted) continue;
      const { id, pod } = adopted;
      const startedMs = job.startMs || clock.now();
      this.#started.set(id.uid, startedMs);
      const handle: SlurmHandle = { run: id.run, jobId: job.id, job, files: new Map() };
      this.#latest.set(id.uid, handle);
      runs.push({ ...runOf(pod, handle, this.#d.hostIP, clock.now()), createdAtMs: startedMs });
    }
    return runs;
  }

  /** The comment key, loaded once (again after a failure). */
  async #commentKey(): Promise<JobCommentKey> {
    this.#key ??= (this.#d.commentKey ?? JobCommentKey.random)().catch((err) => {
      this.#key = undefined;
      throw err;
    });
    return await this.#key;
  }

  /**
   * One job listing for every pod, then the state files of each pod's run whose job has
   * started. A job slurmctld no longer lists (purged after MinJobAge, or lost) has ended.
   */
  async readMany(
    reads: RemoteRead<SlurmHandle>[],
    signal?: AbortSignal,
  ): Promise<(RemoteRun<SlurmHandle> | undefined)[]> {
    const jobs = new Map((await this.#d.slurm.jobs({ signal })).map((j) => [j.id, j]));
    const runs: (RemoteRun<SlurmHandle> | undefined)[] = [];
    for (const { pod, run } of reads) {
      const handle = run?.handle;
      if (!handle) {
        runs.push(run);
        continue;
      }
      const listed = jobs.get(handle.jobId);
      handle.job = listed ??
        (handle.job && !jobEnded(handle.job) ? gone(handle.job) : handle.job);
      if (handle.job && handle.job.state !== "PENDING") await this.#readFiles(pod, handle);
      runs.push(runOf(pod, handle, this.#d.hostIP, this.#d.clock.now()));
    }
    return runs;
  }

  /**
   * Submits the pod's job for run `restarts`; the first run writes the pod's directory first,
   * after the job request is checked (a pod the provider cannot run is refused before any
   * write), and removes it again when the submission fails.
   */
  async make(
    pod: Pod,
    signal?: AbortSignal,
    options?: RemoteMakeOptions,
  ): Promise<RemoteRun<SlurmHandle>> {
    const { config, nodeName, clock } = this.#d;
    const run = options?.restarts ?? 0;
    const uid = pod.metadata?.uid ?? "";
    const key = await this.#commentKey();
    if (run === 0) {
      jobRequestFor(pod, config, nodeName, 0); // refuses before any write
      await writePodDir(pod, { config, kube: this.#d.kube }, { signal });
      this.#started.set(uid, clock.now());
    }
    const elapsed = clock.now() - (this.#started.get(uid) ?? clock.now());
    let jobId: number;
    try {
      if (options?.network) { // each run's: a new attachment brings a new credential
        const owner = jobUserOf(config, pod.metadata?.namespace);
        await writeAgentCredential(podDirOf(config, pod), options.network.agentCredential, owner);
      }
      const request = jobRequestFor(pod, config, nodeName, run, elapsed);
      request.script = withTunnelAgent(request.script, options?.network);
      request.comment = await key.sign(request.comment);
      jobId = await this.#d.slurm.submit(request, { signal });
    } catch (err) {
      if (run === 0) {
        this.#started.delete(uid);
        await removePodDir(config, pod).catch(() => {});
      }
      throw err;
    }
    this.#d.log.info("submitted SLURM job {job} for {pod}", { job: jobId, pod: podKeyOf(pod) });
    const before = run > 0 ? this.#latest.get(uid) : undefined;
    const handle: SlurmHandle = {
      run,
      jobId,
      files: new Map(),
      ...(before ? { initEnds: initEndsOf(pod, before, clock.now()) } : {}),
    };
    this.#latest.set(uid, handle);
    return runOf(pod, handle, this.#d.hostIP, clock.now());
  }

  /**
   * Cancels the pod's job (unless it ended) and removes its directory; the containers read as
   * ended by the deletion, or as they ended before it.
   */
  async remove(
    pod: Pod,
    signal?: AbortSignal,
    run?: RemoteRun<SlurmHandle>,
  ): Promise<Record<string, TerminatedReport>> {
    const handle = run?.handle;
    if (handle && !jobEnded(handle.job)) {
      await this.#d.slurm.cancel(handle.jobId, { signal });
    }
    if (handle) handle.deleted = true;
    this.#started.delete(pod.metadata?.uid ?? "");
    this.#latest.delete(pod.metadata?.uid ?? "");
    await removePodDir(this.#d.config, pod).catch((err) => {
      this.#d.log.warn("removing {pod}'s directory failed: {err}", {
        pod: podKeyOf(pod),
        err: String(err),
      });
    });
    // Between runs the kit keeps how the last one ended.
    return handle ? deletedEnds(pod, handle, this.#d.clock.now()) : {};
  }

  /**
   * Lets go of a run: its job is cancelled unless it ended (a second job of a pod found on
   * adoption); the pod's directory stays, with the run's logs (`kubectl logs --previous`).
   */
  async discard(_pod: Pod, run: RemoteRun<SlurmHandle>, signal: AbortSignal): Promise<void> {
    const handle = run.handle;
    if (handle && !jobEnded(handle.job)) await this.#d.slurm.cancel(handle.jobId, { signal });
  }

  ended(pod: Pod, run: RemoteRun<SlurmHandle> | undefined, restart: boolean): void {
    this.#d.log.info(
      restart
        ? "SLURM job {job} of {pod} ended {state}; resubmitting after back-off"
        : "SLURM job {job} of {pod} ended {state}; its restart policy ends the pod",
      { job: run?.handle?.jobId, pod: podKeyOf(pod), state: run?.handle?.job?.state },
    );
  }

  /**
   * The container's step output of the current run (between runs, of the run that ended), or
   * with `previous` of the run before; followed until the step or its job ends.
   */
  async logs(
    pod: Pod,
    container: string,
    options: ContainerLogOptions,
    runs?: RemoteLogRuns<SlurmHandle>,
  ): Promise<ReadableStream<Uint8Array>> {
    const handle = (runs?.current ?? runs?.previous)?.handle;
    const run = (handle?.run ?? 0) - (options.previous ? 1 : 0);
    if (run < 0) {
      throw new NotFoundError(
        `container ${container} has not been restarted; there is no previous log`,
      );
    }
    const { config, clock } = this.#d;
    const signal = AbortSignal.any([this.#d.signal, ...(options.signal ? [options.signal] : [])]);
    const path = `${podDirOf(config, pod)}/logs/${container}.${run}.log`;
    const owner = jobUserOf(config, pod.metadata?.namespace);
    await jobFileSize(path, owner); // refuses what is not the job's own file, before any answer
    return readLogFile({
      path,
      owner,
      clock,
      done: () =>
        !handle || run !== handle.run || handle.deleted === true ||
        handle.files.get(container)?.exit !== undefined || jobEnded(handle.job),
    }, { ...options, signal });
  }

  /**
   * Reads the `started`/`step`/`exit` files of the run: the job's files, so only through
   * ./ownership/job_files.ts (a link, FIFO or device there reads as no file, and is logged once).
   */
  async #readFiles(pod: Pod, handle: SlurmHandle): Promise<void> {
    const dir = `${podDirOf(this.#d.config, pod)}/state`;
    const owner = jobUserOf(this.#d.config, pod.metadata?.namespace);
    const read = async (path: string) => {
      try {
        return await readJobText(path, owner);
      } catch (err) {
        handle.refused ??= new Set();
        if (!handle.refused.has(path)) {
          this.#d.log.warn("{pod}: {err}", { pod: podKeyOf(pod), err: String(err) });
          handle.refused.add(path);
        }
        return undefined;
      }
    };
    const names = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
      .map((c) => c.name);
    for (const name of names) {
      const files: RunFiles = handle.files.get(name) ?? {};
      if (files.exit) continue;
      const started = await read(`${dir}/${name}.${handle.run}.started`);
      if (started) files.startedMs = Number(started.trim());
      if (files.stepId === undefined) {
        const step = await read(`${dir}/${name}.${handle.run}.step`);
        if (step && /^\d+$/.test(step.trim())) files.stepId = Number(step.trim());
      }
      const exit = await read(`${dir}/${name}.${handle.run}.exit`);
      if (exit) {
        const [code, at] = exit.trim().split(" ").map(Number);
        files.exit = { code, atMs: at };
      }
      handle.files.set(name, files);
    }
  }
}

/** A job slurmctld listed before and lists no more: it ended, how is not known. */
function gone(job: JobInfo): JobInfo {
  return { ...job, state: "CANCELLED", reason: "no longer listed by slurmctld" };
}
