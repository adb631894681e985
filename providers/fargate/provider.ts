/**
 * The fargate provider: each pod bound to the virtual node runs as one ECS task on Fargate, from
 * a task definition registered for the pod (deregistered when the pod is deleted). The kit's
 * RemotePods owns the pod's life — it adopts this node's running tasks on start (so a restarted
 * vkubelet never runs a pod twice), polls DescribeTasks for all pods every `statusInterval`,
 * runs a new task after the kubelet's back-off by the restart policy, and pushes status through
 * {@link notifyPods} — on the ECS backend in `./backend.ts`.
 * @module
 */
import type { Task } from "@aws-sdk/client-ecs";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  backendUnreachable,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  LegacyRemotePodsProvider as RemotePodsProvider,
  podEventSink,
  type PodRef,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
  RemotePods,
} from "../../provider/mod.ts";
import type { AwsClients } from "./aws.ts";
import { FargateBackend } from "./backend.ts";
import type { FargateConfig } from "./config.ts";
import { PodSecrets } from "./pod_secrets.ts";
import { EcsTasks } from "./tasks.ts";

/** Runs the virtual node's pods as Fargate tasks; see the module doc. */
export class FargateProvider extends RemotePodsProvider<Task> implements Provider {
  readonly #config: FargateConfig;
  readonly #deps: ProviderDeps;
  readonly #aws: AwsClients;
  readonly #ecs: EcsTasks;
  readonly #backend: FargateBackend;
  protected readonly pods: RemotePods<Task>;
  readonly #stop = new AbortController();
  readonly #running: Promise<void>;
  /** Secret-sourced env values come marked, and go to Secrets Manager (`./pod_secrets.ts`). */
  readonly secretEnvRefs = true;

  constructor(config: FargateConfig, deps: ProviderDeps, aws: AwsClients) {
    super();
    this.#config = config;
    this.#deps = deps;
    this.#aws = aws;
    this.#ecs = new EcsTasks(aws, config);
    const signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#backend = new FargateBackend({
      ecs: this.#ecs,
      secrets: new PodSecrets(aws.secrets),
      logs: aws.logs,
      config,
      nodeName: deps.nodeName,
      clock: deps.clock,
      event: podEventSink(deps, "vkubelet-fargate"),
      kube: deps.kube,
      signal,
    });
    this.pods = new RemotePods({
      backend: this.#backend,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      hostIP: deps.internalIp,
      // A deletion seen before the tasks are adopted would leave its task running.
      retryList: true,
      keepPodIP: true,
    });
    this.#running = this.pods.run(signal);
  }

  override async deletePod(pod: Pod, options: CallOptions): Promise<void> {
    await super.deletePod(pod, options);
    // A pod whose first RunTask failed has no task, but may have a definition and a secret.
    await this.#backend.release(pod, options.signal);
  }

  configureNode(node: Node): void {
    applyProviderNode(node, {
      capacity: { ...this.#config.capacity },
      labels: {
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": this.#config.region,
        "vkubelet.io/provider": "fargate",
      },
    }, this.#deps);
  }

  async ping(options: CallOptions): Promise<void> {
    const config = this.#config;
    const endpoint = config.endpoint ?? `https://ecs.${config.region}.amazonaws.com`;
    await this.#ecs.ping(options.signal).catch((err) => {
      const what = `ECS cluster ${config.cluster} in ${config.region} (${endpoint})`;
      throw backendUnreachable(what, err, { reason: "EcsUnreachable" });
    });
  }

  /** From CloudWatch Logs: the current task's stream, or the one before with `previous`. */
  getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return this.pods.getContainerLogs(ref, options);
  }

  runInContainer(ref: ContainerRef): Promise<number> {
    return refuseStreaming("exec", NO_SESSION_MANAGER, () => this.#known(ref));
  }

  attachToContainer(ref: ContainerRef): Promise<void> {
    return refuseStreaming("attach", NO_SESSION_MANAGER, () => this.#known(ref));
  }

  portForward(ref: PodRef): Promise<void> {
    const known = () => this.pods.knownPod(ref.namespace, ref.name);
    return refuseStreaming("portForward", NO_SESSION_MANAGER, known);
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
    this.#aws.ecs.destroy();
    this.#aws.logs.destroy();
    this.#aws.secrets.destroy();
  }

  #known(ref: ContainerRef): Pod {
    return this.pods.knownPod(ref.namespace, ref.pod, ref.container);
  }
}

/** Why attach, exec and port-forward are refused. */
const NO_SESSION_MANAGER =
  "ECS Exec needs AWS's Session Manager channel, which vkubelet does not speak";
