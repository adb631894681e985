/**
 * The aci provider: each pod bound to the virtual node runs as one Azure Container Instances
 * container group, named from node, namespace and pod and tagged with them. The kit's RemotePods
 * owns the pod's life — it adopts this node's groups by tag on start (so a restarted vkubelet
 * never runs a pod twice), reads the groups every `statusInterval`, makes a group deleted behind
 * vkubelet's back again by the restart policy after the kubelet's back-off, and pushes status
 * through {@link notifyPods} — on the ACI backend in `./backend.ts`; ACI itself restarts
 * containers by the group's restart policy. Groups of pods the API no longer has are listed, and
 * the core deletes them once its caches synced. This file adds logs, exec and the node.
 * @module
 */
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  applyProviderNode,
  backendUnreachable,
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  LegacyRemotePodsProvider as RemotePodsProvider,
  NotFoundError,
  NotSupportedError,
  podEventSink,
  type PodRef,
  type Provider,
  type ProviderDeps,
  refuseStreaming,
  RemotePods,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { ContainerGroup } from "./azure.ts";
import { AciBackend } from "./backend.ts";
import type { AciConfig } from "./config.ts";
import { execInContainer } from "./exec.ts";
import type { AciGroups } from "./groups.ts";
import { readContainerLog } from "./logs.ts";
import { NodeCapacity } from "./capacity.ts";

/** Runs the virtual node's pods as ACI container groups; see the module doc. */
export class AciProvider extends RemotePodsProvider<ContainerGroup> implements Provider {
  readonly #config: AciConfig;
  readonly #deps: ProviderDeps;
  readonly #groups: AciGroups;
  readonly #backend: AciBackend;
  protected readonly pods: RemotePods<ContainerGroup>;
  readonly #capacity: NodeCapacity;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #running: Promise<void>;
  /** Secret-sourced env values come marked, and go to ACI as `secureValue`. */
  readonly secretEnvRefs = true;

  constructor(
    config: AciConfig,
    deps: ProviderDeps,
    groups: AciGroups,
    options: { kubeProxyKubeconfig?: string } = {},
  ) {
    super();
    this.#config = config;
    this.#deps = deps;
    this.#groups = groups;
    this.#signal = AbortSignal.any([deps.signal, this.#stop.signal]);
    this.#capacity = new NodeCapacity({ config, groups, log: deps.log });
    this.#backend = new AciBackend({
      groups,
      capacity: this.#capacity,
      config,
      nodeName: deps.nodeName,
      clock: deps.clock,
      log: deps.log,
      event: podEventSink(deps, "vkubelet-aci"),
      kube: deps.kube,
      fence: deps.fence,
      kubeProxyKubeconfig: options.kubeProxyKubeconfig,
    });
    this.pods = new RemotePods({
      backend: this.#backend,
      clock: deps.clock,
      log: deps.log,
      intervalMs: config.statusInterval,
      hostIP: deps.internalIp,
      // ACI restarts a group's containers itself; the kit makes again only a group that is gone.
      backendRestarts: true,
      // A deletion seen before the groups are adopted would leave its group running.
      retryList: true,
      keepPodIP: true,
    });
    this.#running = Promise.all([
      this.pods.run(this.#signal),
      this.#capacity.check(this.#signal),
    ]).then(() => {});
  }

  configureNode(node: Node): void {
    applyProviderNode(node, {
      capacity: this.#capacity.capacity(),
      labels: {
        "kubernetes.io/os": this.#config.osType.toLowerCase(),
        "topology.kubernetes.io/region": this.#config.location,
        "vkubelet.io/provider": "aci",
      },
    }, this.#deps);
  }

  notifyNodeChanged(callback: () => void): void {
    this.#capacity.onChange(callback);
  }

  /** ARM answers for the resource group: the node is reachable (see `core/node/outage.ts`). */
  async ping(options: CallOptions): Promise<void> {
    const config = this.#config;
    await this.#groups.ping(options.signal).catch((err) => {
      throw backendUnreachable(
        `Azure Container Instances (${config.endpoint}, resource group ${config.resourceGroup})`,
        err,
        {
          reason: "AciUnreachable",
          hint: "check the network, the credentials and the resource group",
        },
      );
    });
  }

  /** From the pod's group (ACI keeps a log per container, its init containers' too). */
  getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    return settle(() => {
      const pod = this.#known(ref.namespace, ref.pod, ref.container);
      const signal = AbortSignal.any([this.#signal, ...(options.signal ? [options.signal] : [])]);
      return readContainerLog({
        groups: this.#groups,
        group: this.#backend.groupOf(pod),
        container: ref.container,
        clock: this.#deps.clock,
        pollMs: Math.min(this.#config.statusInterval, 2000),
      }, { ...options, signal });
    });
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    const pod = this.#known(ref.namespace, ref.pod, ref.container);
    return await execInContainer({
      groups: this.#groups,
      group: this.#backend.groupOf(pod),
      container: ref.container,
      command: options.command,
      io: options.io,
      signal: options.signal,
    });
  }

  attachToContainer(ref: ContainerRef): Promise<void> {
    return refuseStreaming(
      "attach",
      NO_ACI_CHANNEL,
      () => this.#known(ref.namespace, ref.pod, ref.container),
    );
  }

  portForward(ref: PodRef): Promise<void> {
    return refuseStreaming(
      "portForward",
      NO_ACI_CHANNEL,
      () => this.#known(ref.namespace, ref.name),
    );
  }

  /**
   * 501 naming the reason: ACI's API (Microsoft.ContainerInstance 2023-05-01) reports no CPU or
   * memory use — that is Azure Monitor's metrics API (Microsoft.Insights), whose description is
   * not in the set vkubelet is checked against — and a summary without figures would let
   * metrics-server report pods as using nothing.
   */
  getStatsSummary(_options: CallOptions): Promise<StatsSummary> {
    return Promise.reject(new NotSupportedError(NO_ACI_USAGE));
  }

  /** 501 naming the reason, as {@link getStatsSummary}. */
  getMetricsResource(_options: CallOptions): Promise<string> {
    return Promise.reject(new NotSupportedError(NO_ACI_USAGE));
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  /** The pod (with `container`, its init containers' too) on this node, or NotFoundError. */
  #known(namespace: string, name: string, container?: string): Pod {
    const pod = this.pods.knownPod(namespace, name);
    const names = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]
      .map((c) => c.name);
    if (container !== undefined && !names.includes(container)) {
      throw new NotFoundError(`pod ${namespace}/${name} has no container ${container}`);
    }
    return pod;
  }
}

/** `work()` as a promise: its value, or its exception as a rejection. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Why /stats/summary and /metrics/resource answer 501. */
const NO_ACI_USAGE =
  "ACI's container API (Microsoft.ContainerInstance 2023-05-01) reports no CPU or memory use; the figures are in Azure Monitor's metrics API (Microsoft.Insights), which the aci provider does not read";

/** Why attach and port-forward are refused. */
const NO_ACI_CHANNEL = "ACI offers no such channel that vkubelet can use";
