/**
 * The example remote provider (examples/remote_provider.ts), written on the kit's RemotePods in
 * under 150 lines, keeps the provider contract: the conformance suite runs against it. It keeps
 * no logs and has no exec, so those rules are ignored as capabilities it lacks.
 */
import { runProviderConformance } from "../../provider/testing/mod.ts";
import { createProvider, ToyCloud } from "../../examples/remote_provider.ts";

Deno.test("the example remote provider on RemotePods keeps the provider contract", async (t) => {
  const cloud = new ToyCloud();
  await runProviderConformance(t, {
    create: (deps) => createProvider({ cloud, statusIntervalMs: 50 }, deps),
  });
});
