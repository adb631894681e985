/**
 * The slurm provider (`--provider slurm`): every pod bound to the node runs as one SLURM batch
 * job on a real SLURM cluster, submitted through slurmrestd (`./rest.ts`) or, on a login node,
 * SLURM's commands (`./cli.ts`). Config in `./config.ts`, the pod → job mapping in
 * `./script.ts` and `./job_request.ts`, the kit backend in `./jobs.ts`, status in `./status.ts`. See README.md.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import type { SlurmBackend } from "./backend.ts";
import { CliBackend, commandRunner } from "./cli.ts";
import { parseSlurmConfig, type SlurmConfig } from "./config.ts";
import { checkCanMapUsers, jobUserOf } from "./identity.ts";
import { RestBackend } from "./rest.ts";
import { SlurmProvider } from "./provider.ts";

export { parseSlurmConfig, type SlurmConfig } from "./config.ts";
export { SlurmProvider } from "./provider.ts";
export { jobRequestFor } from "./job_request.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export function createProvider(config: unknown, deps: ProviderDeps): SlurmProvider {
  const parsed = parseSlurmConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid slurm provider config: ${parsed.errors.join("; ")}`);
  }
  const cannot = checkCanMapUsers(parsed.config);
  if (cannot) throw new InvalidInputError(`invalid slurm provider config: ${cannot}`);
  return new SlurmProvider(parsed.config, deps, backendFor(parsed.config));
}

/**
 * slurmrestd when configured, else the commands. The commands, when there, list the jobs: squeue
 * filtered to the users this node's jobs run as, not the whole cluster.
 */
export function backendFor(config: SlurmConfig): SlurmBackend {
  const users = [jobUserOf(config, undefined), ...Object.values(config.runAsUsers)];
  const cli = config.cli &&
    new CliBackend(commandRunner(config.cli.bin), { users: users.map((u) => u.uid) });
  if (config.rest) return new RestBackend(config.rest, cli);
  return cli!;
}
