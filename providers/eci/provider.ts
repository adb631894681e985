/**
 * The eci provider: each pod bound to the virtual node runs as one ECI container group (the ECI
 * backend in `./backend.ts`: CreateContainerGroup with a `ClientToken` per pod and run, batched
 * DescribeContainerGroups), its life owned by the kit's RemotePodsProvider. This file adds exec,
 * stats and the node; attach and port-forward ECI has no call for.
 * @module
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  type CallOptions,
  type ContainerRef,
  type ExecOptions,
  NotFoundError,
  podsSummary,
  type Provider,
  type ProviderDeps,
  RemotePodsProvider,
  type StatsSummary,
} from "../../provider/mod.ts";
import type { ContainerGroup, EciApi } from "./client/api.ts";
import { type EciBackend, eciGroupsSetup } from "./backend.ts";
import type { EciConfig } from "./config.ts";
import { execInGroup } from "./streams/exec.ts";
import { groupsStats } from "./stats.ts";

/** Runs the virtual node's pods as ECI container groups; see the module doc. */
export class EciProvider extends RemotePodsProvider<ContainerGroup, EciBackend>
  implements Provider {
  readonly #config: EciConfig;
  readonly #api: EciApi;
  readonly #startMs: number;
  /** ECI sets `status.podIP` in env itself (`FieldRef.FieldPath`), once the group has its IP. */
  readonly deferredFieldPaths = ["status.podIP"] as const;

  constructor(config: EciConfig, deps: ProviderDeps, api: EciApi) {
    super(deps, (signal) => eciGroupsSetup(config, { ...deps, api, signal }));
    this.#config = config;
    this.#api = api;
    this.#startMs = deps.clock.now();
  }

  configureNode(node: Node): void {
    const { capacity, regionId: region, zoneId: zone } = this.#config;
    this.applyNode(node, { capacity: { ...capacity } }, { provider: "eci", region, zone });
  }

  async ping(options: CallOptions): Promise<void> {
    const { regionId, endpoint = `https://eci.${regionId}.aliyuncs.com` } = this.#config;
    const where = `the ECI API in ${regionId} (${endpoint})`;
    await this.reach((s) => this.#api.ping(s), options, where, { reason: "EciUnreachable" });
  }

  /** Through DescribeContainerLog, from the pod's current group. */
  readonly getContainerLogs: NonNullable<Provider["getContainerLogs"]> = (ref, options) =>
    this.pods.getContainerLogs(ref, options);
  readonly attachToContainer = this.refusing("attach", "ECI's API has no attach call");
  readonly portForward = this.refusing("portForward", "ECI's API has no port-forward call");

  async runInContainer(ref: ContainerRef, options: ExecOptions): Promise<number> {
    this.known(ref);
    const groupId = this.pods.runOf(ref.namespace, ref.pod)?.handle?.containerGroupId;
    if (!groupId) throw new NotFoundError(`container ${ref.container} is not running`);
    return await execInGroup(this.#api, { groupId, container: ref.container }, options);
  }

  /** Each running group's newest DescribeContainerGroupMetric sample; the node is their sum. */
  async getStatsSummary(options: CallOptions): Promise<StatsSummary> {
    const pods = await groupsStats(this.#api, this.pods.running(), options.signal);
    return podsSummary(
      { nodeName: this.deps.nodeName, startMs: this.#startMs },
      this.deps.clock.now(),
      pods,
    );
  }
}
