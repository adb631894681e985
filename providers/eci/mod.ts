/**
 * The eci provider (`--provider eci`): the virtual node's pods run as Alibaba Cloud ECI container
 * groups, through Alibaba's own Node SDK (credentials from its default chain). Config in
 * `./config.ts`, the pod → group mapping in `./request/container_group.ts`, status in `./status.ts`.
 * Loaded only when chosen, so other providers do not pay for the SDK.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import { EciApi } from "./client/api.ts";
import { parseEciConfig } from "./config.ts";
import { EciProvider } from "./provider.ts";

export { type EciConfig, parseEciConfig } from "./config.ts";
export { EciProvider } from "./provider.ts";
export { groupRequestFor } from "./request/container_group.ts";
export { groupSize } from "./request/sizing.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export function createProvider(config: unknown, deps: ProviderDeps): EciProvider {
  const parsed = parseEciConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid eci provider config: ${parsed.errors.join("; ")}`);
  }
  return new EciProvider(parsed.config, deps, new EciApi(parsed.config, deps.clock));
}
