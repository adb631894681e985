/**
 * The slurm provider: every pod bound to the node runs as one SLURM batch job (see
 * `./script.ts`), submitted through slurmrestd or sbatch. The kit's RemotePods owns the pods'
 * life — adoption, one job listing per round for all pods, restarts with back-off — over
 * `./jobs.ts`: on start it adopts this node's jobs (those whose comment vkubelet signed for this
 * node, `./job_comment.ts`, and that run as the pod's user, `./identity.ts`) and lists them as pods, so the core deletes (and this
 * cancels) only those the API no longer has, once its caches have synced; a pod created again
 * adopts its job rather than submit a second one. Here: the node, ping, logs, exec, attach and
 * stats.
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
  LegacyRemotePodsProvider as RemotePodsProvider,
  metricsText,
  NotFoundError,
  NotSupportedError,
  type Provider,
  type ProviderDeps,
  RemotePods,
  type StatsSummary,
} from "../../provider/mod.ts";
import { apptainerExecShell } from "./apptainer.ts";
import type { PartitionInfo, SlurmBackend } from "./backend.ts";
import type { SlurmConfig } from "./config.ts";
import { attachToStep, stepTarget } from "./attach.ts";
import { commandRunner } from "./cli.ts";
import { loadCommentKey } from "./comment_key.ts";
import { execInJob } from "./exec.ts";
import { hostUser, jobUserOf } from "./identity.ts";
import { SlurmJobs } from "./jobs.ts";
import { podDirOf } from "./pod_dir.ts";
import type { SlurmHandle } from "./status.ts";
import { runningPods, slurmStatsSummary, SstatSampler } from "./stats.ts";

/** Runs the node's pods as SLURM jobs; see the module doc. */
export class SlurmProvider extends RemotePodsProvider<SlurmHandle> implements Provider {
  readonly #config: SlurmConfig;
  readonly #deps: ProviderDeps;
  readonly #backend: SlurmBackend;
  readonly #jobs: SlurmJobs;
  protected readonly pods: RemotePods<SlurmHandle>;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #running: Promise<void>;
  readonly #sstat?: SstatSampler;
  readonly #startMs: number;
  #partitions: PartitionInfo[] = [];

  constructor(config: SlurmConfig, deps: ProviderDeps, backend: SlurmBackend) {
    super();
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
    this.#jobs = new SlurmJobs({
      slurm: backend,
      config,
      kube: deps.kube,
      nodeName: deps.nodeName,
      hostIP: deps.internalIp,
      clock: deps.clock,
      log: deps.log,
      signal: this.#signal,
      commentKey: () => loadCommentKey(config),
    });
    this.pods = new RemotePods({
      backend: this.#jobs,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      hostIP: deps.internalIp,
      backoff: { initialMs: config.restartBackOff.initial, maxMs: config.restartBackOff.max },
      // Until slurmctld lists the jobs, none is submitted again nor a pod listed as gone.
      retryList: true,
      // Every pod's IP is the node's, between runs too.
      keepPodIP: true,
    });
    this.#running = this.pods.run(this.#signal);
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
    const pod = this.#known(ref);
    return await this.#jobs.logs(
      pod,
      ref.container,
      options,
      this.pods.logRunsOf(ref.namespace, ref.pod),
    );
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    const pod = this.#known(ref);
    if (!this.#config.cli) {
      throw new NotSupportedError(
        "exec needs srun on vkubelet's host: add cli to the slurm provider config (it may sit beside rest)",
      );
    }
    const handle = this.pods.runOf(ref.namespace, ref.pod)?.handle;
    if (handle?.job?.state !== "RUNNING") {
      throw new NotFoundError(
        `container ${ref.container} is not running; exec needs a running job`,
      );
    }
    const bin = this.#config.cli.bin;
    const user = jobUserOf(this.#config, ref.namespace);
    return await execInJob({
      srun: bin ? `${bin.replace(/\/$/, "")}/srun` : "srun",
      jobId: handle.jobId,
      launcher: `${podDirOf(this.#config, pod)}/c/${ref.container}.sh`,
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
    const pod = this.#known(ref);
    // The last run, ended too: a refusal says how its job is.
    const runs = this.pods.logRunsOf(ref.namespace, ref.pod);
    const handle = (runs.current ?? runs.previous)?.handle;
    const target = stepTarget(pod, handle, ref.container, this.#config, this.#deps.clock);
    const signal = AbortSignal.any([this.#signal, ...(options.signal ? [options.signal] : [])]);
    await attachToStep(target, options.io, signal);
  }

  async getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    if (!this.#sstat) {
      throw new NotSupportedError(
        "stats need sstat on vkubelet's host (slurmrestd has no step statistics): add cli to the slurm provider config (it may sit beside rest)",
      );
    }
    const pods = runningPods(this.pods.running());
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

  /** The pod, when it is on this node and has the container (an init container too). */
  #known(ref: ContainerRef): Pod {
    const pod = this.pods.knownPod(ref.namespace, ref.pod);
    const names = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
    if (!names.some((c) => c.name === ref.container)) {
      throw new NotFoundError(`pod ${ref.namespace}/${ref.pod} has no container ${ref.container}`);
    }
    return pod;
  }
}
