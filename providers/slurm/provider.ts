/**
 * The slurm provider: every pod bound to the node runs as one SLURM batch job, its life owned by
 * the kit's RemotePods over `./backend.ts` (adoption of this node's signed jobs, one job listing
 * per round for all pods, restarts with back-off). Here: the node, ping, logs, exec, attach and
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
  type Provider,
  type ProviderDeps,
  RemotePodsProvider,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { SlurmClient } from "./client/slurm_client.ts";
import type { SlurmConfig } from "./config.ts";
import { type SlurmJobs, slurmJobsSetup } from "./backend.ts";
import { slurmEndpoint, SlurmNode } from "./node.ts";
import { SlurmStats } from "./stats.ts";
import type { SlurmHandle } from "./status.ts";
import { attachToStep, stepTarget } from "./streams/attach.ts";
import { execInPod } from "./streams/exec.ts";

/** Runs the node's pods as SLURM jobs; see the module doc. */
export class SlurmProvider extends RemotePodsProvider<SlurmHandle, SlurmJobs> implements Provider {
  readonly #config: SlurmConfig;
  readonly #slurm: SlurmClient;
  readonly #node: SlurmNode;
  readonly #stats: SlurmStats;

  constructor(config: SlurmConfig, deps: ProviderDeps, slurm: SlurmClient) {
    super(deps, (signal) => slurmJobsSetup(config, { ...deps, slurm, signal }));
    this.#config = config;
    this.#slurm = slurm;
    this.#node = new SlurmNode(config, { slurm, log: deps.log });
    this.#stats = new SlurmStats(config, deps);
  }

  async configureNode(node: Node): Promise<void> {
    this.applyNode(node, await this.#node.fields(), { provider: "slurm" });
  }

  async ping(options: CallOptions): Promise<void> {
    const { where, help } = slurmEndpoint(this.#config);
    await this.reach((signal) => this.#slurm.ping({ signal }), options, where, help);
  }

  getContainerLogs(ref: ContainerRef, options: ContainerLogOptions): Promise<ReadableStream> {
    return this.backendLogs(ref, options);
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
    await attachToStep(target, options.io, this.callSignal(options.signal));
  }

  getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    return this.#stats.summary(this.pods.running(), options.signal);
  }

  async getMetricsResource(options: CallOptions): Promise<string> {
    return metricsText(await this.getStatsSummary(options));
  }
}
