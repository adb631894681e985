/**
 * The provider kit's testing part, exported as `@vkubelet/vkubelet/provider/testing`: the
 * conformance suite a provider runs on itself in its own unit tests, and the fake clock.
 *
 * ```ts ignore
 * import { runProviderConformance } from "@vkubelet/vkubelet/provider/testing";
 * import { createProvider } from "./my_provider.ts";
 *
 * Deno.test("my provider keeps the provider contract", async (t) => {
 *   await runProviderConformance(t, { create: (deps) => createProvider(undefined, deps) });
 * });
 * ```
 * @module
 */
export {
  conformancePod,
  type ProviderConformanceOptions,
  runProviderConformance,
} from "./conformance.ts";
export { CONFORMANCE_RULES, type ConformanceRule } from "./rules.ts";
export { ConformanceError } from "./_session.ts";
export { FakeClock, flush } from "../../base/fake_clock.ts";
