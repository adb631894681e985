/**
 * The aci provider: each pod bound to the virtual node runs as one Azure Container Instances
 * container group, its life owned by the kit's RemotePodsProvider over the ACI backend
 * (`./backend.ts`, which also says how the kit is set up for ACI). This file adds the node (its
 * capacity from `./capacity.ts`), logs and exec (`./streams/`), and usage from Azure Monitor
 * (`./stats.ts`); attach and port-forward ACI has no API for.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import * as kit from "../../provider/mod.ts";
import type { ContainerGroup } from "./azure.ts";
import { type AciBackend, type AciParts, aciPodsSetup } from "./backend.ts";
import { execInContainer } from "./streams/exec.ts";
import { readContainerLog } from "./streams/logs.ts";

/** Runs the virtual node's pods as ACI container groups; see the module doc. */
export class AciProvider extends kit.RemotePodsProvider<ContainerGroup, AciBackend>
  implements kit.Provider {
  readonly #parts: AciParts;
  readonly #startMs: number;
  /** Secret-sourced env values come marked, and go to ACI as `secureValue`. */
  readonly secretEnvRefs = true;

  constructor(parts: AciParts, deps: kit.ProviderDeps, options: { kubeProxyKubeconfig?: string }) {
    super(deps, aciPodsSetup(parts, deps, options));
    this.#parts = parts;
    this.#startMs = deps.clock.now();
  }

  configureNode(node: Node): void {
    const { osType, location: region } = this.#parts.config;
    const fields = { capacity: this.#parts.capacity.capacity() };
    this.applyNode(node, fields, { provider: "aci", os: osType.toLowerCase(), region });
  }

  notifyNodeChanged(callback: () => void): void {
    this.#parts.capacity.onChange(callback);
  }

  /** ARM answers for the resource group: the node is reachable (see `core/node/outage.ts`). */
  async ping(options: kit.CallOptions): Promise<void> {
    const { endpoint, resourceGroup } = this.#parts.config;
    const where = `Azure Container Instances (${endpoint}, resource group ${resourceGroup})`;
    await this.reach((s) => this.#parts.groups.ping(s), options, where, {
      reason: "AciUnreachable",
      hint: "check the network, the credentials and the resource group",
    });
  }

  /** From the pod's group (ACI keeps a log per container, its init containers' too). */
  async getContainerLogs(ref: kit.ContainerRef, options: kit.ContainerLogOptions) {
    const group = this.backend.groupOf(this.known(ref));
    const pollMs = Math.min(this.#parts.config.statusInterval, 2000);
    const source = { groups: this.#parts.groups, group, container: ref.container, pollMs };
    const signal = this.callSignal(options.signal);
    return await readContainerLog({ ...source, clock: this.deps.clock }, { ...options, signal });
  }

  async runInContainer(ref: kit.ContainerRef, options: kit.ExecOptions): Promise<number> {
    const group = this.backend.groupOf(this.known(ref));
    return await execInContainer({ ...options, groups: this.#parts.groups, group, ...ref });
  }

  readonly attachToContainer = this.refusing("attach", NO_ACI_CHANNEL);
  readonly portForward = this.refusing("portForward", NO_ACI_CHANNEL);

  /** Each running group's containers from Azure Monitor (`./stats.ts`); the node their sum. */
  getStatsSummary(options: kit.CallOptions): Promise<kit.StatsSummary> {
    const running = this.pods.running();
    const { nodeName } = this.deps;
    return this.#parts.usage.summary(nodeName, this.#startMs, running, options.signal);
  }

  async getMetricsResource(options: kit.CallOptions): Promise<string> {
    return kit.metricsText(await this.getStatsSummary(options));
  }
}

/** Why attach and port-forward are refused. */
const NO_ACI_CHANNEL = "ACI offers no such channel that vkubelet can use";
