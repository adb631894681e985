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
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  type AttachOptions,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  metricsText,
  NotSupportedError,
  type Provider,
  type ProviderDeps,
  RemotePodsProvider,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { PartitionInfo, SlurmBackend } from "./backend.ts";
import type { SlurmConfig } from "./config.ts";
import { attachToStep, stepTarget } from "./attach.ts";
import { commandRunner } from "./cli.ts";
import { loadCommentKey } from "./comment_key.ts";
import { execInPod } from "./exec.ts";
import { SlurmJobs } from "./jobs.ts";
import type { SlurmHandle } from "./status.ts";
import { runningPods, slurmStatsSummary, SstatSampler } from "./stats.ts";
import { slurmEndpoint, slurmNodeFields } from "./node.ts";

/** Runs the node's pods as SLURM jobs; see the module doc. */
export class SlurmProvider extends RemotePodsProvider<SlurmHandle, SlurmJobs> implements Provider {
  readonly #config: SlurmConfig;
  readonly #slurm: SlurmBackend;
  readonly #sstat?: SstatSampler;
  readonly #startMs: number;
  #partitions: PartitionInfo[] = [];

  constructor(config: SlurmConfig, deps: ProviderDeps, slurm: SlurmBackend) {
    super(deps, (signal) => ({
      backend: new SlurmJobs({
        ...deps,
        slurm,
        config,
        hostIP: deps.internalIp,
        signal,
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
    }));
    this.#config = config;
    this.#slurm = slurm;
    this.#startMs = deps.clock.now();
    if (config.cli) {
      const run = commandRunner(config.cli.bin);
      this.#sstat = new SstatSampler({ run, clock: deps.clock, intervalMs: config.statsInterval });
    }
  }

  async configureNode(node: Node): Promise<void> {
    try {
      this.#partitions = await this.#slurm.partitions({ signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      this.deps.log.warn("reading SLURM partitions failed: {err}", { err: String(err) });
    }
    const fields = slurmNodeFields(this.#config, this.#partitions);
    this.applyNode(node, fields, { provider: "slurm" });
  }

  async ping(options: CallOptions): Promise<void> {
    const { where, help } = slurmEndpoint(this.#config);
    await this.reach((signal) => this.#slurm.ping({ signal }), options, where, help);
  }

  async getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const pod = this.known(ref);
    return await this.backend.logs(
      pod,
      ref.container,
      options,
      this.pods.logRunsOf(ref.namespace, ref.pod),
    );
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    const pod = this.known(ref);
    const handle = this.pods.runOf(ref.namespace, ref.pod)?.handle;
    return await execInPod(this.#config, { pod, handle, container: ref.container }, options);
  }

  async attachToContainer(ref: ContainerRef, options: AttachOptions): Promise<void> {
    const pod = this.known(ref);
    // The last run, ended too: a refusal says how its job is.
    const runs = this.pods.logRunsOf(ref.namespace, ref.pod);
    const handle = (runs.current ?? runs.previous)?.handle;
    const target = stepTarget(pod, handle, ref.container, this.#config, this.deps.clock);
    const signal = this.callSignal(options.signal);
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
    return slurmStatsSummary({ name: this.deps.nodeName, startMs: this.#startMs }, pods, sample);
  }

  async getMetricsResource(options: CallOptions): Promise<string> {
    return metricsText(await this.getStatsSummary(options));
  }

  override async close(): Promise<void> {
    await super.close().catch(() => {});
    this.#slurm.close();
  }
}
