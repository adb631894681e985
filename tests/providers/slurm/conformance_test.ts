/**
 * The slurm provider runs the provider conformance suite (provider/testing) against a real
 * single-node SLURM (`./_slurm.ts`): jobs through slurmrestd, exec through srun, on the real
 * clock so that the status loop runs. Every instance the suite starts shares the SLURM and the
 * shared directory, as a restarted vkubelet would.
 */
import { realClock } from "../../../base/clock.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/slurm/mod.ts";
import { NOBODY, startSlurm } from "../../../tools/harness/slurm.ts";

Deno.test("the slurm provider keeps the provider contract", async (t) => {
  const slurm = await startSlurm();
  Deno.env.set("SLURM_CONF", slurm.conf);
  const config = {
    rest: { socket: slurm.socket },
    cli: {},
    sharedDir: slurm.sharedDir,
    stateDir: `${slurm.dir}/vk-state`,
    fileOwner: NOBODY,
    statusInterval: "300ms",
  };
  try {
    await runProviderConformance(t, {
      nodeName: `vk-conformance-${crypto.randomUUID().slice(0, 6)}`,
      clock: realClock,
      timeoutMs: 30_000,
      create: (deps) => createProvider(config, deps),
    });
  } finally {
    Deno.env.delete("SLURM_CONF");
    await slurm.stop();
  }
});
