/**
 * What the slurm node shows: its capacity from the partitions it submits to (CPUs, memory and the
 * extended resources they have as GRES, so that the scheduler places GPU pods here), and where
 * its backend is, for a ping that fails.
 * @module
 */
import type {
  BackendUnreachableHelpOptions,
  Logger,
  ProviderNodeFields,
} from "../../provider/mod.ts";
import type { PartitionInfo, SlurmClient } from "./client/slurm_client.ts";
import type { SlurmConfig } from "./config.ts";

/**
 * The node's fields, from the partitions read anew each time; when a read fails, from the last
 * partitions read (none before the first), with a warning.
 */
export class SlurmNode {
  readonly #config: SlurmConfig;
  readonly #slurm: SlurmClient;
  readonly #log: Logger;
  #partitions: PartitionInfo[] = [];

  constructor(config: SlurmConfig, deps: { slurm: SlurmClient; log: Logger }) {
    this.#config = config;
    this.#slurm = deps.slurm;
    this.#log = deps.log;
  }

  /** The node's capacity and labels (see {@link slurmNodeFields}). */
  async fields(): Promise<ProviderNodeFields> {
    try {
      this.#partitions = await this.#slurm.partitions({ signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      this.#log.warn("reading SLURM partitions failed: {err}", { err: String(err) });
    }
    return slurmNodeFields(this.#config, this.#partitions);
  }
}

/** The node's capacity and labels from `partitions` (the config's partition only, if set). */
export function slurmNodeFields(
  config: SlurmConfig,
  partitions: PartitionInfo[],
): ProviderNodeFields {
  const chosen = partitions.filter((p) => config.partition ? p.name === config.partition : true);
  const cpus = chosen.reduce((s, p) => s + p.cpus, 0);
  const memory = chosen.reduce((s, p) => s + p.memoryMiB, 0);
  const extended: Record<string, string> = {};
  for (const [resource, gres] of Object.entries(config.extendedResources)) {
    const count = chosen.reduce((s, p) => s + (p.gres?.[gres] ?? 0), 0);
    if (count > 0) extended[resource] = String(count);
  }
  return {
    capacity: {
      ...(cpus ? { cpu: String(cpus) } : {}),
      ...(memory ? { memory: `${memory}Mi` } : {}),
      ...extended,
      pods: "110",
      ...config.capacity,
    },
    labels: config.labels,
  };
}

/** What a failed ping names (slurmrestd, or slurmctld through scontrol) and what to check. */
export function slurmEndpoint(
  config: SlurmConfig,
): { where: string; help: BackendUnreachableHelpOptions } {
  const rest = config.rest;
  const bin = config.cli?.bin;
  const where = rest
    ? `slurmrestd at ${rest.url ?? `unix:${rest.socket}`}`
    : `slurmctld (scontrol ping${bin ? ` from ${bin}` : ""})`;
  const hint = rest
    ? "check that slurmrestd and slurmctld run and that the token is valid"
    : "check that slurmctld runs and this host is a Slurm client";
  return { where, help: { reason: "SlurmUnreachable", hint } };
}
