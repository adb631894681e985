/**
 * The composition of a running vkubelet: given a valid config, start everything and stop it
 * all when the signal aborts. Today it loads the provider and waits; this is where the node
 * controller (registration, status, lease), the pod controller and the kubelet API are added,
 * each as a `run(signal): Promise<void>` pushed onto `loops` below, with their dependencies
 * (kube client, clock, logger, provider) passed in one deps object.
 * @module
 */
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import { getLogger } from "./log.ts";
import { type Provider, providerCapabilities } from "./provider.ts";
import { loadProvider, type LoadProviderOptions } from "./providers.ts";

/** What {@link runVkubelet} needs besides the config; `main.ts` picks the real ones. */
export interface RunDeps {
  /** Aborts on SIGINT/SIGTERM: everything drains and `runVkubelet` resolves. */
  signal: AbortSignal;
  clock: Clock;
  /** The node's InternalIP when `--node-ip` is not set. */
  detectInternalIp: () => string;
  /** Replaced in tests. */
  loadProvider?: (options: LoadProviderOptions) => Promise<Provider>;
  /** Called once everything has started (tests wait on it). */
  onReady?: (provider: Provider) => void;
  /** How long the loops get to drain after the signal before we stop waiting. */
  drainTimeoutMs?: number;
}

/** Runs vkubelet until `deps.signal` aborts; rejects if start-up fails. */
export async function runVkubelet(config: Config, deps: RunDeps): Promise<void> {
  const log = getLogger(["vkubelet"]).with({ node: config.nodeName });
  const internalIp = config.nodeIp ?? deps.detectInternalIp();
  const provider = await (deps.loadProvider ?? loadProvider)({
    provider: config.provider,
    providerConfig: config.providerConfig,
    deps: {
      nodeName: config.nodeName,
      log: getLogger(["vkubelet", "provider"]).with({ node: config.nodeName }),
      clock: deps.clock,
      internalIp,
      daemonPort: config.port,
      signal: deps.signal,
    },
  });
  log.info("provider {provider} loaded with {capabilities}", {
    provider: config.provider,
    capabilities: providerCapabilities(provider).join(", ") || "no optional capabilities",
  });

  // Long-running parts of vkubelet, each `run(signal)`: node controller, lease controller, pod
  // controller, kubelet API server. None exists yet; add them here.
  const loops: Promise<void>[] = [];

  deps.onReady?.(provider);
  await abortion(deps.signal);
  log.info("shutting down");
  await drain(loops, deps.drainTimeoutMs ?? 10_000, deps.clock);
  await provider.close?.();
  log.info("stopped");
}

/** Resolves when `signal` aborts. */
function abortion(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

/** Waits for every loop to finish, but no longer than `timeoutMs`. */
async function drain(loops: Promise<void>[], timeoutMs: number, clock: Clock): Promise<void> {
  const log = getLogger(["vkubelet"]);
  const giveUp = new AbortController();
  const timeout = clock.sleep(timeoutMs, giveUp.signal).then(
    () => "timeout" as const,
    () => "done" as const,
  );
  const settled = Promise.allSettled(loops).then((results) => {
    for (const result of results) {
      if (result.status === "rejected") {
        log.error("a loop failed while stopping: {err}", { err: result.reason });
      }
    }
    return "done" as const;
  });
  const outcome = await Promise.race([settled, timeout]);
  giveUp.abort();
  if (outcome === "timeout") {
    log.warn("gave up waiting for loops to stop after {ms} ms", { ms: timeoutMs });
  }
}

/** The first non-internal IPv4 address of this host, else 127.0.0.1. */
export function detectInternalIp(): string {
  try {
    const found = Deno.networkInterfaces().find((i) =>
      i.family === "IPv4" && !i.address.startsWith("127.")
    );
    return found?.address ?? "127.0.0.1";
  } catch {
    return "127.0.0.1";
  }
}
