/**
 * The interlink provider (`--provider interlink`): the virtual node's pods run as jobs of an
 * interLink plugin, through interLink's API server or the plugin directly, so vkubelet stands in
 * for interLink's virtual kubelet. Config in `./config.ts`, the wire format in `./client/wire.ts`, the
 * protocol in docs/interlink-protocol.md. No dependency beyond the kit and Deno's `node:http`.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import { parseInterlinkConfig } from "./config.ts";
import { InterlinkProvider } from "./provider.ts";

export { type InterlinkConfig, parseInterlinkConfig } from "./config.ts";
export { InterlinkProvider } from "./provider.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export function createProvider(config: unknown, deps: ProviderDeps): InterlinkProvider {
  const parsed = parseInterlinkConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid interlink provider config: ${parsed.errors.join("; ")}`);
  }
  return new InterlinkProvider(parsed.config, deps);
}
