/**
 * The mock provider runs the provider conformance suite (provider/testing) in memory, on the
 * suite's fake clock.
 */
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/mock/mod.ts";

Deno.test("the mock provider keeps the provider contract", async (t) => {
  await runProviderConformance(t, {
    create: (deps) => createProvider(undefined, deps),
    // The mock keeps its pods in memory only, by design: a new instance starts empty.
    inMemory: true,
  });
});
