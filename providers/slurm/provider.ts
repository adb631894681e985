/**
 * The slurm provider: every pod bound to the node runs as one SLURM batch job (see
 * `./script.ts`), submitted through slurmrestd or sbatch; one loop lists the jobs for all pods
 * (`./supervisor.ts`) and pushes status. On start it adopts this node's jobs — those whose
 * comment names this node and that run as the pod's user (`./identity.ts`) — and lists them as
 * pods, so the core deletes (and this cancels) only those the API no longer
 * has, once its caches have synced; a pod created again adopts its job rather than submit a
 * second one.
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  type AttachOptions,
  backendUnreachable,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  metricsText,
  NotFoundError,
  NotSupportedError,
  podKeyOf,
  PodTable,
  type Provider,
  type ProviderDeps,
  type StatsSummary,
} from "../../provider/mod.ts";
import { apptainerExecShell } from "./apptainer.ts";
import type { PartitionInfo, SlurmBackend } from "./backend.ts";
import type { SlurmConfig } from "./config.ts";
import { attachToStep, stepTarget } from "./attach.ts";
import { commandRunner } from "./cli.ts";
import { execInJob } from "./exec.ts";
import { hostUser, jobUserOf } from "./identity.ts";
import { jobFileSize } from "./job_files.ts";
import { jobRequestFor } from "./job_request.ts";
import { readLogFile } from "./logs.ts";
import { podDirOf, readSavedPod, removePodDir, writePodDir } from "./pod_dir.ts";
import { parseJobComment } from "./script.ts";
import { jobEnded, type PodRecord, podStatusOf } from "./status.ts";
import { runningPods, slurmStatsSummary, SstatSampler } from "./stats.ts";
import { supervise } from "./supervisor.ts";

/** Runs the node's pods as SLURM jobs; see the module doc. */
export class SlurmProvider implements Provider {
  readonly #config: SlurmConfig;
  readonly #deps: ProviderDeps;
  readonly #backend: SlurmBackend;
  readonly #pods: PodTable<PodRecord>;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #running: Promise<void>;
  readonly #sstat?: SstatSampler;
  readonly #startMs: number;
  #reachable = true;
  #partitions: PartitionInfo[] = [];

  constructor(config: SlurmConfig, deps: ProviderDeps, backend: SlurmBackend) {
    this.#config = config;
    this.#deps = deps;
    this.#backend = backend;
    this.#signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#startMs = deps.clock.now();
    if (config.cli) {
      this.#sstat = new SstatSampler({
        run: commandRunner(config.cli.bin),
        clock: deps.clock,
        intervalMs: config.statsInterval,
      });
    }
    this.#pods = new PodTable<PodRecord>({
      statusOf: (record) => podStatusOf(record, deps.internalIp, deps.clock.now()),
      log: deps.log,
    });
    const adopted = this.#adopt(this.#signal);
    this.#pods.holdUntil(adopted);
    this.#running = adopted.then(() =>
      supervise({
        backend,
        config,
        records: this.#pods.records,
        clock: deps.clock,
        log: deps.log,
        submit: (record, signal) => this.#submit(record, signal),
        changed: (record) => this.#pods.notify(record),
        reachable: (ok) => void (this.#reachable = ok),
      }, this.#signal)
    );
  }

  async createPod(pod: Pod, options: CallOptions): Promise<void> {
    await this.#pods.adopted(options.signal);
    const k = podKeyOf(pod);
    let record = this.#pods.records.get(k);
    if (record && record.pod.metadata?.uid !== pod.metadata?.uid) {
      await this.#finish(record, options.signal);
      record = undefined;
    }
    if (record) {
      // The same pod again, or one adopted from its job: keep its job.
      record.pod = { ...structuredClone(pod), status: record.pod.status };
      this.#pods.notify(record);
      return;
    }
    jobRequestFor(pod, this.#config, this.#deps.nodeName, 0); // refuses before any write
    record = {
      pod: structuredClone(pod),
      run: 0,
      files: new Map(),
      lastTerminated: new Map(),
      deleting: false,
      startTimeMs: this.#deps.clock.now(),
    };
    await writePodDir(pod, { config: this.#config, kube: this.#deps.kube }, options);
    this.#pods.records.set(k, record);
    try {
      await this.#submit(record, options.signal);
    } catch (err) {
      this.#pods.records.delete(k);
      await removePodDir(this.#config, pod).catch(() => {});
      throw err;
    }
  }

  updatePod(pod: Pod, _options: CallOptions): Promise<void> {
    // A submitted job's script cannot change; labels and annotations are taken over.
    const record = this.#pods.get(pod.metadata?.namespace, pod.metadata?.name);
    if (record && record.pod.metadata?.uid === pod.metadata?.uid) {
      record.pod = { ...structuredClone(pod), status: record.pod.status };
      this.#pods.notify(record);
    }
    return Promise.resolve();
  }

  async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    const record = await this.#pods.ofPod(pod, options.signal);
    if (!record) return;
    await this.#finish(record, options.signal);
  }

  getPod(namespace: string, name: string, _options: CallOptions): Promise<Pod | undefined> {
    return this.#pods.getPod(namespace, name);
  }

  listPods(options: CallOptions): Promise<Pod[]> {
    return this.#pods.listPods(options.signal);
  }

  notifyPods(callback: (pod: Pod) => void): () => void {
    return this.#pods.subscribe(callback);
  }

  async configureNode(node: Node): Promise<void> {
    try {
      this.#partitions = await this.#backend.partitions({ signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      this.#deps.log.warn("reading SLURM partitions failed: {err}", { err: String(err) });
    }
    const chosen = this.#partitions.filter((p) =>
      this.#config.partition ? p.name === this.#config.partition : true
    );
    const cpus = chosen.reduce((s, p) => s + p.cpus, 0);
    const memory = chosen.reduce((s, p) => s + p.memoryMiB, 0);
    // Extended resources the partitions have as GRES, so that the scheduler places GPU pods here.
    const extended: Record<string, string> = {};
    for (const [resource, gres] of Object.entries(this.#config.extendedResources)) {
      const count = chosen.reduce((s, p) => s + (p.gres?.[gres] ?? 0), 0);
      if (count > 0) extended[resource] = String(count);
    }
    applyProviderNode(node, {
      capacity: {
        ...(cpus ? { cpu: String(cpus) } : {}),
        ...(memory ? { memory: `${memory}Mi` } : {}),
        ...extended,
        pods: "110",
        ...this.#config.capacity,
      },
      labels: {
        "kubernetes.io/os": "linux",
        "vkubelet.io/provider": "slurm",
        ...this.#config.labels,
      },
    }, this.#deps);
  }

  async ping(options: CallOptions): Promise<void> {
    try {
      await this.#backend.ping(options);
    } catch (err) {
      const rest = this.#config.rest;
      const where = rest
        ? `slurmrestd at ${rest.url ?? `unix:${rest.socket}`}`
        : `slurmctld (scontrol ping${
          this.#config.cli?.bin ? ` from ${this.#config.cli.bin}` : ""
        })`;
      throw backendUnreachable(where, err, {
        reason: "SlurmUnreachable",
        hint: rest
          ? "check that slurmrestd and slurmctld run and that the token is valid"
          : "check that slurmctld runs and this host is a Slurm client",
      });
    }
  }

  async getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const record = this.#known(ref);
    const run = options.previous ? record.run - 1 : record.run;
    if (run < 0) {
      throw new NotFoundError(
        `container ${ref.container} has not been restarted; there is no previous log`,
      );
    }
    const signal = AbortSignal.any([this.#signal, ...(options.signal ? [options.signal] : [])]);
    const path = `${podDirOf(this.#config, record.pod)}/logs/${ref.container}.${run}.log`;
    const owner = jobUserOf(this.#config, ref.namespace);
    await jobFileSize(path, owner); // refuses what is not the job's own file, before any answer
    return readLogFile({
      path,
      owner,
      clock: this.#deps.clock,
      done: () =>
        options.previous || record.deleting || record.finished === true ||
        record.files.get(ref.container)?.exit !== undefined || jobEnded(record.job),
    }, { ...options, signal });
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    const record = this.#known(ref);
    if (!this.#config.cli) {
      throw new NotSupportedError(
        "exec needs srun on vkubelet's host: add cli to the slurm provider config (it may sit beside rest)",
      );
    }
    if (record.jobId === undefined || record.job?.state !== "RUNNING") {
      throw new NotFoundError(
        `container ${ref.container} is not running; exec needs a running job`,
      );
    }
    const bin = this.#config.cli.bin;
    const user = jobUserOf(this.#config, ref.namespace);
    return await execInJob({
      srun: bin ? `${bin.replace(/\/$/, "")}/srun` : "srun",
      jobId: record.jobId,
      launcher: `${podDirOf(this.#config, record.pod)}/c/${ref.container}.sh`,
      command: options.command,
      // In the container's apptainer instance, not beside it.
      run: this.#config.runtime === "apptainer"
        ? apptainerExecShell(this.#config, ref.container)
        : undefined,
      io: options.io,
      signal: options.signal,
      // SLURM lets only the job's user add a step to it: vkubelet (root, since the pods'
      // directories belong to other users) becomes that user.
      runAs: user.uid === hostUser().uid ? undefined : user,
    });
  }

  async attachToContainer(ref: ContainerRef, options: AttachOptions): Promise<void> {
    const target = stepTarget(this.#known(ref), ref.container, this.#config, this.#deps.clock);
    const signal = AbortSignal.any([this.#signal, ...(options.signal ? [options.signal] : [])]);
    await attachToStep(target, options.io, signal);
  }

  async getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    if (!this.#sstat) {
      throw new NotSupportedError(
        "stats need sstat on vkubelet's host (slurmrestd has no step statistics): add cli to the slurm provider config (it may sit beside rest)",
      );
    }
    const pods = runningPods(this.#pods.records.values());
    const sample = await this.#sstat.sample(pods.map((p) => p.jobId), options.signal);
    return slurmStatsSummary({ name: this.#deps.nodeName, startMs: this.#startMs }, pods, sample);
  }

  async getMetricsResource(options: CallOptions): Promise<string> {
    return metricsText(await this.getStatsSummary(options));
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running.catch(() => {});
    this.#backend.close();
  }

  /** Lists this node's jobs and makes a record of each pod's latest run. */
  async #adopt(signal: AbortSignal): Promise<void> {
    for (let attempt = 0;; attempt++) {
      try {
        const jobs = await this.#backend.jobs({ signal });
        for (const job of jobs.sort((a, b) => a.id - b.id)) {
          const id = parseJobComment(job.comment);
          if (!id || id.node !== this.#deps.nodeName) continue;
          // Anyone may comment a job as vkubelet does: only a job of the user vkubelet submits
          // the pod's jobs as is its own.
          const user = jobUserOf(this.#config, id.namespace);
          if (job.userId !== user.uid) {
            this.#deps.log.warn(
              "not adopting SLURM job {job} whose comment names {pod} on this node: it runs as uid {uid}, not as the pod's user (uid {expected})",
              {
                job: job.id,
                pod: `${id.namespace}/${id.name}`,
                uid: job.userId,
                expected: user.uid,
              },
            );
            continue;
          }
          const identity = { metadata: { namespace: id.namespace, name: id.name, uid: id.uid } };
          const saved = await readSavedPod(podDirOf(this.#config, identity));
          const pod: Pod = saved?.metadata?.uid === id.uid
            ? saved
            : { ...identity, spec: { containers: [] } };
          this.#pods.records.set(podKeyOf(pod), {
            pod,
            run: id.run,
            jobId: job.id,
            job,
            files: new Map(),
            lastTerminated: new Map(),
            deleting: false,
            startTimeMs: job.startMs || this.#deps.clock.now(),
          });
        }
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.#deps.log.warn("listing SLURM jobs to adopt failed: {err}", { err: String(err) });
        await this.#deps.clock.sleep(Math.min(30_000, 1000 * 2 ** attempt), signal).catch(() => {});
      }
    }
  }

  async #submit(record: PodRecord, signal?: AbortSignal): Promise<void> {
    const elapsed = this.#deps.clock.now() - record.startTimeMs;
    const request = jobRequestFor(
      record.pod,
      this.#config,
      this.#deps.nodeName,
      record.run,
      elapsed,
    );
    record.jobId = await this.#backend.submit(request, { signal });
    this.#deps.log.info("submitted SLURM job {job} for {pod}", {
      job: record.jobId,
      pod: podKeyOf(record.pod),
    });
    this.#pods.notify(record);
  }

  /** Cancels the pod's job, reports it terminated, forgets it and removes its directory. */
  async #finish(record: PodRecord, signal?: AbortSignal): Promise<void> {
    record.deleting = true;
    if (record.jobId !== undefined && !jobEnded(record.job)) {
      await this.#backend.cancel(record.jobId, { signal });
    }
    this.#pods.notify(record);
    this.#pods.forget(record);
    await removePodDir(this.#config, record.pod).catch((err) => {
      this.#deps.log.warn("removing {pod}'s directory failed: {err}", {
        pod: podKeyOf(record.pod),
        err: String(err),
      });
    });
  }

  #known(ref: ContainerRef): PodRecord {
    const record = this.#pods.get(ref.namespace, ref.pod);
    if (!record) throw new NotFoundError(`pod ${ref.namespace}/${ref.pod} is not on this node`);
    const names = [
      ...(record.pod.spec?.initContainers ?? []),
      ...(record.pod.spec?.containers ?? []),
    ];
    if (!names.some((c) => c.name === ref.container)) {
      throw new NotFoundError(`pod ${ref.namespace}/${ref.pod} has no container ${ref.container}`);
    }
    return record;
  }
}
