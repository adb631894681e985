/**
 * The zun provider (`--provider zun`): a pod with one container and no init containers runs as
 * a plain Zun container, any other as a capsule, on OpenStack Zun, authenticated with keystone v3
 * from clouds.yaml or the `OS_*` variables (./credentials.ts), at the newest container API
 * microversion both sides speak (./client/zun_api.ts). Layout: ./provider.ts wires it; the pod →
 * Zun request mapping is in ./request/, Zun's answers as pod status in ./status.ts, the calls and
 * the runs' life (on the kit's RemotePods, through ./backend.ts) in ./client/, logs and exec in
 * ./streams/, stats in ./stats.ts. See README.md.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import { parseZunConfig } from "./config.ts";
import { loadCredentials } from "./credentials.ts";
import { ZunProvider } from "./provider.ts";
import { ZunApi } from "./client/zun_api.ts";

export { parseZunConfig, type ZunConfig } from "./config.ts";
export { ZunProvider } from "./provider.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export function createProvider(config: unknown, deps: ProviderDeps): ZunProvider {
  const parsed = parseZunConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid zun provider config: ${parsed.errors.join("; ")}`);
  }
  const api = new ZunApi({
    credentials: loadCredentials(parsed.config.cloud),
    serviceType: parsed.config.serviceType,
    requestTimeoutMs: parsed.config.requestTimeout,
    apiVersion: parsed.config.apiVersion,
  });
  return new ZunProvider(parsed.config, deps, api);
}
