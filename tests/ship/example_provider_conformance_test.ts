/**
 * docs/writing-a-provider.md: the example provider under examples/ runs the provider
 * conformance suite (provider/testing) as a provider author would run it on theirs.
 */
import { runProviderConformance } from "../../provider/testing/mod.ts";
import { createProvider } from "../../examples/hello_provider.ts";

Deno.test("the example provider keeps the provider contract", async (t) => {
  await runProviderConformance(t, {
    create: (deps) => createProvider({ greeting: "hi" }, deps),
    // The example keeps its pods in memory: a new instance starts empty.
    inMemory: true,
  });
});
