/**
 * The mock provider (`--provider mock`): an in-memory, instant provider for demos, conformance
 * tests and benchmarks. Pods are Running as soon as they are created, with loopback pod IPs
 * from a configurable CIDR, kubelet-like statuses, deterministic logs, a few exec commands,
 * echoing port-forwards and steady non-zero usage in `/stats/summary` and `/metrics/resource`.
 * Its config file is described in `./config.ts`; test hooks in {@link ANNOTATIONS}.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import { parseMockConfig } from "./config.ts";
import { MockProvider } from "./provider.ts";

export { ANNOTATIONS, type MockPod, MockProvider } from "./provider.ts";
export { type MockConfig, parseMockConfig } from "./config.ts";

/** Builds the mock from its parsed config file (or none); every config problem at once. */
export function createProvider(config: unknown, deps: ProviderDeps): MockProvider {
  const parsed = parseMockConfig(config, deps.nodeName);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid mock provider config: ${parsed.errors.join("; ")}`);
  }
  return new MockProvider(parsed.config, deps);
}
