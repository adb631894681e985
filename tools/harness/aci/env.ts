/**
 * The aci provider's test bed without a control plane: the ACI emulator with Prism in front,
 * and a provider in this process pointed at Prism (plain http on loopback, so the test token).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import type { ProviderDeps, ProviderKubeClient } from "../../../provider/mod.ts";
import { type AciProvider, createProvider } from "../../../providers/aci/mod.ts";
import { type AciEmulator, startAciEmulator } from "./emulator.ts";
import { type Prism, startPrism } from "./prism.ts";
import { eventually } from "../wait.ts";

/** Test subscription and resource group (any GUID does). */
export const SUBSCRIPTION = "00000000-0000-4000-8000-000000000047";

/** The provider config for an endpoint, plus `extra`. */
export function aciConfig(endpoint: string, extra: Record<string, unknown> = {}) {
  return {
    subscriptionId: SUBSCRIPTION,
    resourceGroup: "vk-test",
    location: "westeurope",
    endpoint,
    statusInterval: "300ms",
    // Tests delete groups behind the provider's back and wait for it to notice.
    steadyStatusInterval: "1s",
    ...extra,
  };
}

/** The emulator behind Prism. */
export interface AciBackend {
  emu: AciEmulator;
  prism: Prism;
  /** Prism's log lines that report a violation of the specification. */
  violations(): string[];
  close(): Promise<void>;
}

/** Starts the emulator and Prism in front of it. */
export async function startBackend(): Promise<AciBackend> {
  const emu = startAciEmulator();
  let prism: Prism;
  try {
    prism = await startPrism(emu.url);
  } catch (err) {
    await emu.close();
    throw err;
  }
  emu.publicUrl = prism.url;
  return {
    emu,
    prism,
    violations: () =>
      prism.output().split("\n").filter((l) => /violation|\[VALIDATOR\]|✖/i.test(l)),
    async close() {
      await prism.stop();
      await emu.close();
    },
  };
}

/** A provider on the backend. */
export interface ProviderOnAci extends AciBackend {
  provider: AciProvider;
  deps: ProviderDeps;
  /** Every pod status the provider pushed. */
  pushed: Pod[];
}

/** Starts the backend and a provider on it (with `kube` as its API client, if given). */
export async function startProviderOnAci(
  extra: Record<string, unknown> = {},
  kube?: ProviderKubeClient,
  moreDeps: Partial<ProviderDeps> = {},
): Promise<ProviderOnAci> {
  const backend = await startBackend();
  const shutdown = new AbortController();
  const deps: ProviderDeps = {
    nodeName: `vk-aci-${crypto.randomUUID().slice(0, 6)}`,
    log: getLogger(["vkubelet", "provider"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
    kube,
    ...moreDeps,
  };
  // Azure Monitor's metrics go to the emulator directly: Prism has no description to check them by.
  const monitor = { monitorEndpoint: backend.emu.url, metricsInterval: "1s" };
  const provider = createProvider(aciConfig(backend.prism.url, { ...monitor, ...extra }), deps);
  const pushed: Pod[] = [];
  provider.notifyPods((pod) => void pushed.push(pod));
  return {
    ...backend,
    provider,
    deps,
    pushed,
    async close() {
      shutdown.abort();
      await provider.close();
      await backend.close();
    },
  };
}

/** A pod for the provider, with a fresh uid. */
export function aciPod(name: string, spec: Partial<NonNullable<Pod["spec"]>> = {}): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "team-a", name, uid: crypto.randomUUID() },
    spec: { containers: [{ name: "main", image: "busybox" }], ...spec },
  };
}

/** Polls `check` until it gives a value (at most `ms`). */
export function until<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  ms = 15_000,
): Promise<T> {
  return eventually(what, check, ms);
}
