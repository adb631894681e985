/**
 * The slurm provider (`--provider slurm`): every pod bound to the node runs as one SLURM batch
 * job on a real SLURM cluster, submitted through slurmrestd or, on a login node, SLURM's commands
 * (`./client/`). The folder's layout, as every provider's: `./config.ts`, `./provider.ts`, the
 * kit backend `./backend.ts`, pod → job in `./request/`, job → pod status in `./status.ts`,
 * logs, exec and attach in `./streams/`, and which jobs are this node's in `./ownership/`. See
 * README.md.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import type { SlurmClient } from "./client/slurm_client.ts";
import { CliClient, commandRunner } from "./client/cli.ts";
import { parseSlurmConfig, type SlurmConfig } from "./config.ts";
import { checkCanMapUsers, jobUserOf } from "./ownership/identity.ts";
import { RestClient } from "./client/rest.ts";
import { SlurmProvider } from "./provider.ts";

export { parseSlurmConfig, type SlurmConfig } from "./config.ts";
export { SlurmProvider } from "./provider.ts";
export { jobRequestFor } from "./request/job_request.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export function createProvider(config: unknown, deps: ProviderDeps): SlurmProvider {
  const parsed = parseSlurmConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid slurm provider config: ${parsed.errors.join("; ")}`);
  }
  const cannot = checkCanMapUsers(parsed.config);
  if (cannot) throw new InvalidInputError(`invalid slurm provider config: ${cannot}`);
  return new SlurmProvider(parsed.config, deps, clientFor(parsed.config));
}

/**
 * slurmrestd when configured, else the commands. The commands, when there, list the jobs: squeue
 * filtered to the users this node's jobs run as, not the whole cluster.
 */
export function clientFor(config: SlurmConfig): SlurmClient {
  const users = [jobUserOf(config, undefined), ...Object.values(config.runAsUsers)];
  const cli = config.cli &&
    new CliClient(commandRunner(config.cli.bin), { users: users.map((u) => u.uid) });
  if (config.rest) return new RestClient(config.rest, cli);
  return cli!;
}
