/**
 * The aci provider: each pod bound to the virtual node runs as one Azure Container Instances
 * container group (the ACI backend in `./backend.ts`; ACI itself restarts containers by the
 * group's restart policy), its life owned by the kit's RemotePodsProvider. This file adds logs,
 * exec and the node (its capacity from `./capacity.ts`); attach, port-forward and stats ACI has
 * no API for.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  type CallOptions,
  type ContainerLogOptions,
  type ContainerRef,
  type ExecOptions,
  NotSupportedError,
  podEventSink,
  type Provider,
  type ProviderDeps,
  RemotePodsProvider,
} from "../../provider/mod.ts";
import type { ContainerGroup } from "./azure.ts";
import { AciBackend } from "./backend.ts";
import type { AciConfig } from "./config.ts";
import { execInContainer } from "./exec.ts";
import type { AciGroups } from "./groups.ts";
import { readContainerLog } from "./logs.ts";
import { NodeCapacity } from "./capacity.ts";

/** Runs the virtual node's pods as ACI container groups; see the module doc. */
export class AciProvider extends RemotePodsProvider<ContainerGroup, AciBackend>
  implements Provider {
  readonly #config: AciConfig;
  readonly #groups: AciGroups;
  readonly #capacity: NodeCapacity;
  /** Secret-sourced env values come marked, and go to ACI as `secureValue`. */
  readonly secretEnvRefs = true;

  constructor(
    config: AciConfig,
    deps: ProviderDeps,
    groups: AciGroups,
    options: { kubeProxyKubeconfig?: string } = {},
  ) {
    const capacity = new NodeCapacity({ config, groups, log: deps.log });
    super(deps, () => ({
      backend: new AciBackend({
        ...deps,
        groups,
        capacity,
        config,
        event: podEventSink(deps, "vkubelet-aci"),
        kubeProxyKubeconfig: options.kubeProxyKubeconfig,
      }),
      alsoRun: (signal) => capacity.check(signal),
      intervalMs: config.statusInterval,
      // ACI runs no hooks; the kit runs them through ACI's exec.
      hooks: "exec",
      // ACI restarts a group's containers itself; the kit makes again only a group that is gone.
      backendRestarts: true,
      // A deletion seen before the groups are adopted would leave its group running.
      retryList: true,
      keepPodIP: true,
    }));
    this.#config = config;
    this.#groups = groups;
    this.#capacity = capacity;
  }

  configureNode(node: Node): void {
    const { osType, location: region } = this.#config;
    const fields = { capacity: this.#capacity.capacity() };
    this.applyNode(node, fields, { provider: "aci", os: osType.toLowerCase(), region });
  }

  notifyNodeChanged(callback: () => void): void {
    this.#capacity.onChange(callback);
  }

  /** ARM answers for the resource group: the node is reachable (see `core/node/outage.ts`). */
  async ping(options: CallOptions): Promise<void> {
    const { endpoint, resourceGroup } = this.#config;
    const where = `Azure Container Instances (${endpoint}, resource group ${resourceGroup})`;
    await this.reach((s) => this.#groups.ping(s), options, where, {
      reason: "AciUnreachable",
      hint: "check the network, the credentials and the resource group",
    });
  }

  /** From the pod's group (ACI keeps a log per container, its init containers' too). */
  async getContainerLogs(
    ref: ContainerRef,
    options: ContainerLogOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const group = this.backend.groupOf(this.known(ref));
    const pollMs = Math.min(this.#config.statusInterval, 2000);
    const source = { groups: this.#groups, group, container: ref.container, pollMs };
    return await readContainerLog({ ...source, clock: this.deps.clock }, {
      ...options,
      signal: this.callSignal(options.signal),
    });
  }

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    const group = this.backend.groupOf(this.known(ref));
    return await execInContainer({ ...options, groups: this.#groups, group, ...ref });
  }

  readonly attachToContainer = this.refusing("attach", NO_ACI_CHANNEL);
  readonly portForward = this.refusing("portForward", NO_ACI_CHANNEL);
  /** 501 naming the reason ({@link NO_ACI_USAGE}). */
  readonly getStatsSummary = (_options?: CallOptions): Promise<never> =>
    Promise.reject(new NotSupportedError(NO_ACI_USAGE));
  /** 501 naming the reason, as {@link getStatsSummary}. */
  readonly getMetricsResource = this.getStatsSummary;
}

/**
 * Why /stats/summary and /metrics/resource answer 501: ACI's API reports no CPU or memory use —
 * that is Azure Monitor's metrics API (Microsoft.Insights), whose description is not in the set
 * vkubelet is checked against — and a summary without figures would let metrics-server report
 * pods as using nothing.
 */
const NO_ACI_USAGE =
  "ACI's container API (Microsoft.ContainerInstance 2023-05-01) reports no CPU or memory use; the figures are in Azure Monitor's metrics API (Microsoft.Insights), which the aci provider does not read";

/** Why attach and port-forward are refused. */
const NO_ACI_CHANNEL = "ACI offers no such channel that vkubelet can use";
