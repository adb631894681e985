/**
 * The aci provider (`--provider aci`): the virtual node's pods run as Azure Container Instances
 * container groups, through Microsoft's SDK (`@azure/arm-containerinstance`, api-version
 * 2023-05-01) with `@azure/identity`'s default credential chain. Config in `./config.ts`, the
 * pod → container group mapping in `./container_group.ts`, status in `./status.ts`. Loaded only
 * when chosen, so other providers do not pay for the SDK.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import { createAciClient } from "./azure.ts";
import { type AciConfig, parseAciConfig } from "./config.ts";
import { AciGroups } from "./client/groups.ts";
import { AciProvider } from "./provider.ts";
import { ArmReadBudget } from "./client/read_budget.ts";
import { readGroupUsage } from "./client/monitor.ts";
import { NodeCapacity } from "./capacity.ts";
import { AciUsage } from "./stats.ts";

export { type AciConfig, parseAciConfig } from "./config.ts";
export { AciProvider } from "./provider.ts";
export { containerGroupFor } from "./request/container_group.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export function createProvider(input: unknown, deps: ProviderDeps): AciProvider {
  const parsed = parseAciConfig(input);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid aci provider config: ${parsed.errors.join("; ")}`);
  }
  const config = parsed.config;
  const budget = new ArmReadBudget(config.armReads);
  const client = createAciClient(config, budget);
  const groups = new AciGroups(client, config);
  const capacity = new NodeCapacity({ config, groups, log: deps.log });
  const usage = new AciUsage({
    read: (groupId, signal) =>
      readGroupUsage(client, config.monitorEndpoint ?? config.endpoint, groupId, {
        nowMs: Date.now(),
        signal,
      }),
    clock: deps.clock,
    log: deps.log,
    refreshMs: config.metricsInterval,
    readsPerSecond: config.armReads.perSecond,
  });
  return new AciProvider({ config, groups, capacity, usage }, deps, {
    kubeProxyKubeconfig: readKubeProxyKubeconfig(config),
  });
}

/** The kube-proxy extension's kubeconfig, read once at start (`kubeProxy.kubeconfig`). */
function readKubeProxyKubeconfig(config: AciConfig): string | undefined {
  const path = config.kubeProxy?.kubeconfig;
  if (path === undefined) return undefined;
  try {
    return Deno.readTextFileSync(path);
  } catch (err) {
    throw new InvalidInputError(
      `invalid aci provider config: kubeProxy.kubeconfig: cannot read ${path} (${
        (err as Error).message
      }); give a kubeconfig file kube-proxy can use`,
    );
  }
}
