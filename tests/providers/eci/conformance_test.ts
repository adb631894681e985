/**
 * The eci provider runs the provider conformance suite (provider/testing) against the ECI
 * emulator: the provider in this process, its groups in one emulator that every instance the
 * suite starts (another node, a restart) shares, on the real clock so that the status loop runs.
 * Nothing is skipped: the emulator's log is what the pod's script echoes, and its exec session
 * runs the command (verified against the emulator only, not ECI). Every request the SDK sent
 * matched Alibaba's published metadata, or the test fails.
 */
import assert from "node:assert/strict";
import { realClock } from "../../../base/clock.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/eci/mod.ts";
import { startEciEmulator } from "../../../tools/harness/eci/emulator.ts";
import { emulatorConfig, useTestCredentials } from "../../../tools/harness/eci/env.ts";

Deno.test("the eci provider keeps the provider contract", async (t) => {
  const emu = await startEciEmulator();
  const unset = useTestCredentials();
  try {
    await runProviderConformance(t, {
      nodeName: `vk-conformance-${crypto.randomUUID().slice(0, 6)}`,
      clock: realClock,
      create: (deps) => createProvider(emulatorConfig(emu, { statusInterval: "300ms" }), deps),
    });
    assert.deepEqual(emu.strays, [], "every request matches the ECI metadata");
  } finally {
    unset();
    await emu.stop();
  }
});
