/**
 * The interlink provider with `target: plugin` runs the provider conformance suite against the
 * reference plugin (examples/interlink_plugin/plugin.py) over real HTTP; every instance the suite
 * starts (another node, a restart) talks to the same plugin. Skipped: `exec` — interLink's API
 * has no exec call; the provider answers NotSupportedError.
 */
import { realClock } from "../../../base/clock.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { startPlugin } from "./_plugin.ts";

Deno.test("the interlink provider (target plugin) keeps the provider contract", async (t) => {
  const plugin = await startPlugin();
  try {
    await runProviderConformance(t, {
      nodeName: `vk-conformance-${crypto.randomUUID().slice(0, 6)}`,
      clock: realClock,
      create: (deps) =>
        createProvider({ target: "plugin", url: plugin.url, statusInterval: "200ms" }, deps),
      skip: ["exec"],
    });
  } finally {
    await plugin.stop();
  }
});
