/**
 * The composition of a running vkubelet: given a valid config, connect to the cluster, load the
 * providers, start the kubelet API, register the nodes (status, lease, health) and run the pods;
 * stop it all when the signal aborts. The start-up is one path for one node and for several
 * (`--nodes`): `load.ts` loads them, `serve.ts` serves them as one set.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import type { Config } from "../config/config.ts";
import { getLogger } from "../../base/log.ts";
import { type Provider, providerCapabilities } from "../../provider/mod.ts";
import type { LoadProviderOptions } from "../provider_loader.ts";
import type { NodeIdentityHooks } from "../node_identity.ts";
import { drain, Loops } from "./loops.ts";
import { VkubeletMetrics } from "../../core/metrics.ts";
import { LeadershipFence } from "../../k8s/leader_election/mod.ts";
import { freePort } from "./parts.ts";
import { connectAndLoad, nodeEntries } from "./load.ts";
import { serveNodes } from "./serve.ts";
import type { NodeSet } from "../node_set.ts";
import type { Tracer } from "../../core/tracing.ts";

export { StartupConfigError, StartupTimeoutError } from "./parts.ts";
export { LoopFailedError } from "./loops.ts";

/** What {@link runVkubelet} needs besides the config; `main.ts` picks the real ones. */
export interface RunDeps {
  /** Aborts on SIGINT/SIGTERM: everything drains and `runVkubelet` resolves. */
  signal: AbortSignal;
  clock: Clock;
  /** The node's InternalIP when `--node-ip` is not set. */
  detectInternalIp: () => string;
  /** Replaced in tests. */
  loadProvider?: (options: LoadProviderOptions) => Promise<Provider>;
  /** Handed each {@link NodeSet} before it starts (tests remove nodes with it). */
  onNodeSet?: (set: NodeSet) => void;
  /** Called once everything has started (tests wait on it). */
  onReady?: (provider: Provider) => void;
  /** How long the loops get to drain after the signal before we stop waiting. */
  drainTimeoutMs?: number;
  /** Spans for pod syncs and kubelet API requests (`app/tracing.ts`); none: tracing off. */
  tracer?: Tracer;
  /** Test hooks of TLS bootstrap and rotation (short certificates, an early renewal). */
  identityHooks?: NodeIdentityHooks;
}

/**
 * Runs vkubelet until `deps.signal` aborts; rejects if start-up fails. One path for one node and
 * for many: the nodes are a list (one node is a list of one), loaded together, and served as
 * one {@link NodeSet} (`serve.ts`); with `--nodes` the set shares one pod watch.
 */
export async function runVkubelet(config: Config, deps: RunDeps): Promise<void> {
  const several = config.nodes.length > 0;
  const entries = nodeEntries(config, deps);
  const log = getLogger(["vkubelet"]).with(
    several ? { nodes: entries.length } : { node: config.nodeName },
  );
  // `--port 0` picks a free port now, so the providers and the nodes announce the real one.
  const port = config.port === 0
    ? freePort(several ? entries[0].nodeIp : config.listenAddress)
    : config.port;
  // Everything started below stops with `stop`: on the signal, or when start-up fails.
  const stop = new AbortController();
  const metrics = new VkubeletMetrics();
  // --leader-elect: every write of this replica needs the lease (k8s/leader_election/fence.ts).
  const fence = config.leaderElect ? new LeadershipFence(deps.clock) : undefined;
  metrics.leader.set(1);
  for (const entry of entries) metrics.standard.nodeName.set({ node: entry.name }, 1);
  const loaded = await connectAndLoad(config, deps, {
    entries,
    port,
    metrics,
    fence,
    signal: stop.signal,
  });
  const provider = loaded.providers.get(entries[0].name)!;
  log.info("talking to {server} as configured by {source}", {
    server: loaded.kube.config.server,
    source: loaded.kube.config.source,
  });
  log.info("provider {provider} loaded with {capabilities}", {
    provider: config.provider,
    capabilities: providerCapabilities(provider).join(", ") || "no optional capabilities",
  });
  const onAbort = () => stop.abort(deps.signal.reason);
  deps.signal.addEventListener("abort", onAbort, { once: true });
  if (deps.signal.aborted) onAbort(); // Stopped while the provider was loading.
  const loops = new Loops(stop, log);
  const atExit: (() => Promise<void> | void)[] = [];
  try {
    await serveNodes({
      config: { ...config, port },
      deps: { ...deps, signal: stop.signal },
      entries,
      loaded,
      metrics,
      fence,
      loops,
      log,
      atExit,
    });
    if (!loops.failure) log.info("shutting down");
  } catch (err) {
    // A stop asked for while starting is not a failure.
    if (!deps.signal.aborted && !loops.failure) throw err;
    if (!loops.failure) log.info("stopped while starting");
  } finally {
    stop.abort();
    deps.signal.removeEventListener("abort", onAbort);
    await drain(loops.all, deps.drainTimeoutMs ?? 10_000, deps.clock);
    for (const exit of atExit) await exit();
    await Promise.all([...loaded.providers.values()].map((p) => p.close?.()));
    for (const tunnel of loaded.tunnels?.byNode.values() ?? []) await tunnel.close();
    loaded.close();
    await loaded.identity?.stop();
    log.info("stopped");
  }
  // Like virtual-kubelet's nodeutil.Node.Run: when one controller ends, all of them stop.
  if (loops.failure) throw loops.failure;
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
