/**
 * The fargate provider: each pod bound to the virtual node runs as one ECS task on Fargate (the
 * ECS backend in `./backend.ts`), its life owned by the kit's RemotePodsProvider; logs come from
 * CloudWatch Logs, usage for `kubectl top` and the HPA from CloudWatch Container Insights
 * (`./stats.ts`), and exec, attach and port-forward are refused.
 * @module
 */
import type { Task } from "@aws-sdk/client-ecs";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type CallOptions,
  metricsText,
  type Provider,
  type ProviderDeps,
  RemotePodsProvider,
  type StatsSummary,
} from "../../provider/mod.ts";
import { type FargateBackend, NO_SESSION_MANAGER, remoteOptions } from "./backend.ts";
import type { AwsClients } from "./client/aws.ts";
import { EcsTasks } from "./client/tasks.ts";
import type { FargateConfig } from "./config.ts";
import { TaskStats } from "./stats.ts";

/** Runs the virtual node's pods as Fargate tasks; see the module doc. */
export class FargateProvider extends RemotePodsProvider<Task, FargateBackend> implements Provider {
  readonly #config: FargateConfig;
  readonly #aws: AwsClients;
  readonly #ecs: EcsTasks;
  readonly #stats: TaskStats;
  /** Secret-sourced env values come marked, and go to Secrets Manager (`./client/pod_secrets.ts`). */
  readonly secretEnvRefs = true;

  constructor(config: FargateConfig, deps: ProviderDeps, aws: AwsClients) {
    const ecs = new EcsTasks(aws, config);
    super(deps, (signal) => remoteOptions({ config, deps, aws, ecs, signal }));
    [this.#config, this.#aws, this.#ecs] = [config, aws, ecs];
    const { clock, nodeName } = deps;
    this.#stats = new TaskStats({ ...aws, config, throttle: ecs.throttle, clock, nodeName });
  }

  override async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    await super.deletePod(pod, options);
    // A pod whose first RunTask failed has no task, but may have a definition and a secret.
    await this.backend.release(pod, options.signal);
  }

  configureNode(node: Node): void {
    const { capacity, region, cpuArchitecture } = this.#config;
    // The tasks' architecture, not vkubelet's: a pod that asks for the other one says so in its
    // fargate.vkubelet.io/cpu-architecture annotation (and a nodeSelector on the label fails).
    const arch = cpuArchitecture === "ARM64" ? "arm64" : "amd64";
    this.applyNode(node, { capacity: { ...capacity } }, { provider: "fargate", region, arch });
  }

  async ping(options: CallOptions): Promise<void> {
    const { cluster, region, endpoint = `https://ecs.${region}.amazonaws.com` } = this.#config;
    const where = `ECS cluster ${cluster} in ${region} (${endpoint})`;
    await this.reach((s) => this.#ecs.ping(s), options, where, { reason: "EcsUnreachable" });
  }

  /** The running pods' CPU and memory from Container Insights; the node is their sum. */
  getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    return this.#stats.summary(this.pods.running(), options.signal);
  }

  /** `/metrics/resource` (what metrics-server reads), from the same summary. */
  async getMetricsResource(options: CallOptions): Promise<string> {
    return metricsText(await this.getStatsSummary(options));
  }

  /** From CloudWatch Logs: the current task's stream, or the one before with `previous`. */
  readonly getContainerLogs: NonNullable<Provider["getContainerLogs"]> = (ref, options) =>
    this.pods.getContainerLogs(ref, options);
  readonly runInContainer = this.refusing("exec", NO_SESSION_MANAGER);
  readonly attachToContainer = this.refusing("attach", NO_SESSION_MANAGER);
  readonly portForward = this.refusing("portForward", NO_SESSION_MANAGER);

  override async close(): Promise<void> {
    await super.close();
    for (const client of Object.values(this.#aws)) client.destroy();
  }
}
