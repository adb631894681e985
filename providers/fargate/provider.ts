/**
 * The fargate provider: each pod bound to the virtual node runs as one ECS task on Fargate (the
 * ECS backend in `./backend.ts`), its life owned by the kit's RemotePodsProvider; logs come from
 * CloudWatch Logs, and exec, attach and port-forward are refused.
 * @module
 */
import type { Task } from "@aws-sdk/client-ecs";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type CallOptions,
  podEventSink,
  type Provider,
  type ProviderDeps,
  RemotePodsProvider,
} from "../../provider/mod.ts";
import type { AwsClients } from "./client/aws.ts";
import { FargateBackend } from "./backend.ts";
import type { FargateConfig } from "./config.ts";
import { PodSecrets } from "./client/pod_secrets.ts";
import { EcsTasks } from "./client/tasks.ts";

/** Runs the virtual node's pods as Fargate tasks; see the module doc. */
export class FargateProvider extends RemotePodsProvider<Task, FargateBackend> implements Provider {
  readonly #config: FargateConfig;
  readonly #aws: AwsClients;
  readonly #ecs: EcsTasks;
  /** Secret-sourced env values come marked, and go to Secrets Manager (`./client/pod_secrets.ts`). */
  readonly secretEnvRefs = true;

  constructor(config: FargateConfig, deps: ProviderDeps, aws: AwsClients) {
    const ecs = new EcsTasks(aws, config);
    super(deps, (signal) => ({
      backend: new FargateBackend({
        ...deps,
        ecs,
        secrets: new PodSecrets(aws.secrets),
        logs: aws.logs,
        config,
        event: podEventSink(deps, "vkubelet-fargate"),
        signal,
      }),
      intervalMs: config.statusInterval,
      // ECS runs no hooks and there is no exec to run them through.
      hooks: "refuse",
      hooksRefused: NO_SESSION_MANAGER,
      // A deletion seen before the tasks are adopted would leave its task running.
      retryList: true,
      keepPodIP: true,
    }));
    this.#config = config;
    this.#aws = aws;
    this.#ecs = ecs;
  }

  override async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    await super.deletePod(pod, options);
    // A pod whose first RunTask failed has no task, but may have a definition and a secret.
    await this.backend.release(pod, options.signal);
  }

  configureNode(node: Node): void {
    const { capacity, region } = this.#config;
    this.applyNode(node, { capacity: { ...capacity } }, { provider: "fargate", region });
  }

  async ping(options: CallOptions): Promise<void> {
    const { cluster, region, endpoint = `https://ecs.${region}.amazonaws.com` } = this.#config;
    const where = `ECS cluster ${cluster} in ${region} (${endpoint})`;
    await this.reach((s) => this.#ecs.ping(s), options, where, { reason: "EcsUnreachable" });
  }

  /** From CloudWatch Logs: the current task's stream, or the one before with `previous`. */
  readonly getContainerLogs: NonNullable<Provider["getContainerLogs"]> = (ref, options) =>
    this.pods.getContainerLogs(ref, options);
  readonly runInContainer = this.refusing("exec", NO_SESSION_MANAGER);
  readonly attachToContainer = this.refusing("attach", NO_SESSION_MANAGER);
  readonly portForward = this.refusing("portForward", NO_SESSION_MANAGER);

  override async close(): Promise<void> {
    await super.close();
    for (const client of [this.#aws.ecs, this.#aws.logs, this.#aws.secrets]) client.destroy();
  }
}

/** Why attach, exec and port-forward are refused. */
const NO_SESSION_MANAGER =
  "ECS Exec needs AWS's Session Manager channel, which vkubelet does not speak";
