/**
 * The aci provider runs the provider conformance suite (provider/testing) against the ACI
 * emulator behind Prism: the provider in this process, its groups in one emulator that every
 * instance the suite starts (another node, a restart) shares, on the real clock so that the
 * status loop runs. Skipped: `exec` — ACI's exec terminal reports no exit code, so the rule's
 * non-zero exit cannot hold (the provider answers 0 when the session ends; see its README).
 */
import { realClock } from "../../../base/clock.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/aci/mod.ts";
import { aciConfig, startBackend } from "../../../tools/harness/aci/env.ts";

Deno.test("the aci provider keeps the provider contract", async (t) => {
  const backend = await startBackend();
  try {
    await runProviderConformance(t, {
      nodeName: `vk-conformance-${crypto.randomUUID().slice(0, 6)}`,
      clock: realClock,
      create: (deps) => createProvider(aciConfig(backend.prism.url), deps),
      skip: ["exec"],
    });
  } finally {
    await backend.close();
  }
});
