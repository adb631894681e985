/**
 * The process provider runs the provider conformance suite (provider/testing) with real local
 * processes (the suite's pod runs `/bin/sh`), no cluster, on the suite's fake clock. Each node
 * gets its own state directory, kept across the restart rule's new instance.
 */
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/process/mod.ts";

Deno.test("the process provider keeps the provider contract", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "vk-process-conformance-" });
  try {
    await runProviderConformance(t, {
      create: (deps) =>
        createProvider({ stateDir: `${root}/${deps.nodeName}`, cgroups: "off" }, deps),
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
