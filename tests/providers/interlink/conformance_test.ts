/**
 * The interlink provider with `target: plugin` runs the provider conformance suite against the
 * reference plugin (examples/interlink_plugin/plugin.py) over real HTTP, twice: as it is, and
 * answering as the real SLURM plugin does (`realLike`: empty states for pods it has no job for,
 * a status copy refreshed every 10 s, no init-container states; ./_real_like.ts). Every instance
 * the suite starts (another node, a restart) talks to the same plugin. Skipped: `exec` —
 * interLink's API has no exec call; the provider answers NotSupportedError; SLURM-like, the
 * provider runs as one that keeps its pods in memory (see below).
 */
import { realClock } from "../../../base/clock.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { startPlugin } from "./_plugin.ts";

for (const realLike of [false, true]) {
  const mode = realLike ? "a SLURM-like plugin" : "the reference plugin";
  Deno.test(`the interlink provider (target plugin) keeps the provider contract on ${mode}`, async (t) => {
    const plugin = await startPlugin({ realLike });
    try {
      await runProviderConformance(t, {
        nodeName: `vk-conformance-${crypto.randomUUID().slice(0, 6)}`,
        clock: realClock,
        create: (deps) =>
          createProvider({ target: "plugin", url: plugin.url, statusInterval: "200ms" }, deps),
        // The SLURM plugin cannot list its jobs (a /status of no pods is the ping's resource
        // answer, pkg/slurm/Status.go:107-131): a new instance knows no pod until the core creates
        // it again (the integration test's restart step), as a provider that keeps its pods in
        // memory; a deletion it has not adopted is still sent to the plugin.
        inMemory: realLike,
        skip: ["exec"],
        // The SLURM-like status copy is 10 s old at most: a pod reaches Running in up to ~10 s.
        ...(realLike ? { timeoutMs: 25_000 } : {}),
      });
    } finally {
      await plugin.stop();
    }
  });
}
