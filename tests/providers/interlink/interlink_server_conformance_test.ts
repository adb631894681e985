/**
 * The interlink provider with `target: interlink` keeps the provider contract in front of
 * interLink's own API server (tools/harness/interlink/, built from Go modules at the version the
 * SLURM plugin's go.mod names) and the reference plugin answering as the SLURM plugin does
 * (./_real_like.ts). Skipped: `exec` — interLink's API has no exec call. The provider runs as
 * one that keeps its pods in memory: the SLURM plugin cannot list its jobs, and interLink's
 * server lists only the statuses it has cached, which a restarted server has lost.
 */
import { realClock } from "../../../base/clock.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { startInterlinkServer } from "../../../tools/harness/interlink/interlink.ts";
import { startPlugin } from "./_plugin.ts";

Deno.test("the interlink provider (target interlink) keeps the provider contract through interLink's API server", async (t) => {
  const plugin = await startPlugin({ realLike: true });
  try {
    await using server = await startInterlinkServer({ pluginUrl: plugin.url! });
    await runProviderConformance(t, {
      nodeName: `vk-ilserver-${crypto.randomUUID().slice(0, 6)}`,
      clock: realClock,
      create: (deps) =>
        createProvider({ target: "interlink", url: server.url, statusInterval: "200ms" }, deps),
      inMemory: true,
      skip: ["exec"],
      // The plugin's status copy is up to 10 s old: a pod reaches Running in up to ~10 s.
      timeoutMs: 25_000,
    });
  } finally {
    await plugin.stop();
  }
});
