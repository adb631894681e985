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
import { AciGroups } from "./groups.ts";
import { AciProvider } from "./provider.ts";

export { type AciConfig, parseAciConfig } from "./config.ts";
export { AciProvider } from "./provider.ts";
export { containerGroupFor } from "./container_group.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export function createProvider(config: unknown, deps: ProviderDeps): AciProvider {
  const parsed = parseAciConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid aci provider config: ${parsed.errors.join("; ")}`);
  }
  const groups = new AciGroups(createAciClient(parsed.config), parsed.config);
  return new AciProvider(parsed.config, deps, groups, {
    kubeProxyKubeconfig: readKubeProxyKubeconfig(parsed.config),
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
