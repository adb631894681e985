/**
 * The node's capacity: the config's, checked once at start against the location's quota
 * (`Location_ListUsage`: container groups and standard cores still free) and capabilities (the
 * largest group for the config's osType). A capacity beyond the quota is lowered to it, with a
 * warning naming the config field, so the scheduler never binds more pods than Azure will run;
 * the per-group maximum from the capabilities replaces `maxGroupCpu`/`maxGroupMemoryGB`.
 * Reading them is best effort: without an answer the config stands.
 * @module
 */
import type { Logger } from "../../provider/mod.ts";
import type { AciConfig } from "./config.ts";
import type { AciGroups, LocationLimits } from "./client/groups.ts";
import type { GroupLimits } from "./sizing.ts";

/** What {@link NodeCapacity} needs. */
export interface NodeCapacityDeps {
  config: AciConfig;
  groups: Pick<AciGroups, "limits">;
  log: Logger;
}

/** The node's capacity and the per-group maximum; see the module doc. */
export class NodeCapacity {
  readonly #deps: NodeCapacityDeps;
  #location: LocationLimits = {};
  readonly #callbacks: (() => void)[] = [];

  constructor(deps: NodeCapacityDeps) {
    this.#deps = deps;
  }

  /** Reads the location's usage and capabilities once; never throws. */
  async check(signal: AbortSignal): Promise<void> {
    try {
      this.#location = await this.#deps.groups.limits(signal);
    } catch (err) {
      if (!signal.aborted) {
        this.#deps.log.warning(
          "cannot read the usage and capabilities of {location}; the config's capacity stands: {err}",
          { location: this.#deps.config.location, err: String(err) },
        );
      }
      return;
    }
    const { config } = this.#deps;
    const { groups, cores } = this.#location;
    if (groups && groups.limit - groups.used < Number(config.capacity.pods)) {
      this.#deps.log.warning(
        "capacity.pods {pods} is more than the {free} container groups {location}'s quota has free; the node offers {free}",
        { pods: config.capacity.pods, free: groups.limit - groups.used, location: config.location },
      );
    }
    if (cores && cores.limit - cores.used < Number(config.capacity.cpu)) {
      this.#deps.log.warning(
        "capacity.cpu {cpu} is more than the {free} cores {location}'s quota has free; the node offers {free}",
        { cpu: config.capacity.cpu, free: cores.limit - cores.used, location: config.location },
      );
    }
    for (const callback of this.#callbacks) callback();
  }

  /** The node's capacity (cpu, memory, pods), lowered to the quota when it is known. */
  capacity(): Record<string, string> {
    const { capacity } = this.#deps.config;
    const { groups, cores } = this.#location;
    const lower = (configured: string, free: number | undefined) =>
      free !== undefined && free >= 0 && free < Number(configured) ? String(free) : configured;
    return {
      cpu: lower(capacity.cpu, cores && cores.limit - cores.used),
      memory: capacity.memory,
      pods: lower(capacity.pods, groups && groups.limit - groups.used),
    };
  }

  /** The largest container group: the location's capabilities, else the config's. */
  groupLimits(): GroupLimits {
    return {
      maxCpu: this.#location.maxCpu || this.#deps.config.maxGroupCpu,
      maxMemoryInGB: this.#location.maxMemoryInGB || this.#deps.config.maxGroupMemoryGB,
    };
  }

  /** Registers a callback for when the capacity changed (after the check). */
  onChange(callback: () => void): void {
    this.#callbacks.push(callback);
  }
}
