/**
 * The eci provider in this process against a fresh emulator, without a control plane.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import type { ProviderDeps, ProviderKubeClient } from "../../../provider/mod.ts";
import { createProvider, type EciProvider } from "../../../providers/eci/mod.ts";
import { ECI_TEST_ENV, type EciEmulator, startEciEmulator } from "./emulator.ts";

/** A provider on the emulator. */
export interface ProviderOnEmulator {
  emu: EciEmulator;
  provider: EciProvider;
  config: Record<string, unknown>;
  nodeName: string;
  /** Polls until `check` gives a value (at most 10 s). */
  eventually<T>(
    what: string,
    check: () => T | false | undefined | Promise<T | false | undefined>,
  ): Promise<T>;
  close(): Promise<void>;
}

/** The provider config for an emulator. */
export function emulatorConfig(emu: EciEmulator, extra: Record<string, unknown> = {}) {
  return {
    regionId: emu.regionId,
    endpoint: emu.endpoint,
    vSwitchId: "vsw-test1",
    securityGroupId: "sg-test1",
    zoneId: "cn-hangzhou-h",
    statusInterval: "200ms",
    ...extra,
  };
}

/** A pod for the provider, with a fresh uid. */
export function eciPod(name: string, spec: Partial<NonNullable<Pod["spec"]>> = {}): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "team-a", name, uid: crypto.randomUUID() },
    spec: { containers: [{ name: "main", image: "busybox" }], ...spec },
  };
}

/** Sets the emulator's credentials in the environment (the SDK's default chain reads them). */
export function useTestCredentials(): () => void {
  for (const [k, v] of Object.entries(ECI_TEST_ENV)) Deno.env.set(k, v);
  return () => {
    for (const k of Object.keys(ECI_TEST_ENV)) Deno.env.delete(k);
  };
}

/** Starts an emulator and a provider with the test config plus `extra`. */
export async function startProviderOnEmulator(
  extra: Record<string, unknown> = {},
  kube?: ProviderKubeClient,
): Promise<ProviderOnEmulator> {
  const emu = await startEciEmulator();
  const unset = useTestCredentials();
  const config = emulatorConfig(emu, extra);
  const shutdown = new AbortController();
  const nodeName = `vk-eci-${crypto.randomUUID().slice(0, 6)}`;
  const deps: ProviderDeps = {
    nodeName,
    log: getLogger(["vkubelet", "provider"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
    kube,
  };
  const provider = createProvider(config, deps);
  return {
    emu,
    provider,
    config,
    nodeName,
    async eventually(what, check) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const value = await check();
        if (value) return value;
        if (Date.now() > deadline) {
          const pods = await provider.listPods({});
          throw new Error(
            `timed out waiting for ${what}; the provider has ${
              JSON.stringify(pods.map((p) => p.status))
            }`,
          );
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async close() {
      shutdown.abort();
      await provider.close();
      unset();
      await emu.stop();
    },
  };
}
