/**
 * The composition of a running vkubelet: given a valid config, connect to the cluster, load the
 * provider, start the kubelet API, register the node (status, lease, health) and run the pods;
 * stop it all when the signal aborts.
 * @module
 */
import type { Clock } from "../base/clock.ts";
import type { Config } from "./config/config.ts";
import { getLogger } from "../base/log.ts";
import { type Provider, providerCapabilities, type ProviderDeps } from "../provider/mod.ts";
import { loadProvider, type LoadProviderOptions, ProviderLoadError } from "./provider_loader.ts";
import { isKubeConfigError, type KubeClient, loadKubeConfig } from "../k8s/mod.ts";
import { type Clients, createClients } from "./run_clients.ts";
import { wireNode } from "./wire_node.ts";
import { createKubeletApiServer, servingCsrSource } from "./run_kubelet_api.ts";
import { type CertificateSource, sharedCertificates } from "../x509/mod.ts";
import { type NodeIdentity, type NodeIdentityHooks, startNodeIdentity } from "./node_identity.ts";
import { drain, Loops } from "./run_loops.ts";
import { preflight } from "./preflight.ts";
import { VkubeletMetrics } from "../core/metrics.ts";
import { observePodController, serveMetrics } from "./metrics_server.ts";
import { parseHostPort } from "./config/schema.ts";
import { LeadershipFence } from "../k8s/leader_election/mod.ts";
import { highAvailabilityProblem, runLeaderElected, type WarmStandby } from "./leader_run.ts";
import { abortion, freePort, StartupConfigError, withStartupTimeout } from "./run_parts.ts";
import { runNodeSet } from "./run_nodes.ts";
import type { NodeSet } from "./node_set.ts";
import type { Tracer } from "../core/tracing.ts";

export { StartupConfigError, StartupTimeoutError } from "./run_parts.ts";
export { LoopFailedError } from "./run_loops.ts";

/** What {@link runVkubelet} needs besides the config; `main.ts` picks the real ones. */
export interface RunDeps {
  /** Aborts on SIGINT/SIGTERM: everything drains and `runVkubelet` resolves. */
  signal: AbortSignal;
  clock: Clock;
  /** The node's InternalIP when `--node-ip` is not set. */
  detectInternalIp: () => string;
  /** Replaced in tests. */
  loadProvider?: (options: LoadProviderOptions) => Promise<Provider>;
  /** With `--nodes`: handed the {@link NodeSet} before it starts (tests remove nodes with it). */
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

/** Runs vkubelet until `deps.signal` aborts; rejects if start-up fails. */
export async function runVkubelet(config: Config, deps: RunDeps): Promise<void> {
  if (config.nodes.length > 0) return await runNodeSet(config, deps);
  const log = getLogger(["vkubelet"]).with({ node: config.nodeName });
  const internalIp = config.nodeIp ?? deps.detectInternalIp();
  // `--port 0` picks a free port now, so the provider and the node announce the real one.
  const port = config.port === 0 ? freePort(config.listenAddress) : config.port;
  // Everything started below stops with `stop`: on the signal, or when start-up fails.
  const stop = new AbortController();
  const metrics = new VkubeletMetrics();
  // --leader-elect: every write of this replica needs the lease (k8s/leader_election/fence.ts).
  const fence = config.leaderElect ? new LeadershipFence(deps.clock) : undefined;
  metrics.leader.set(1);
  metrics.standard.nodeName.set({ node: config.nodeName }, 1);
  const { kube, heartbeat, reviews, provider, close, identity } = await connectAndLoad(
    config,
    deps,
    metrics,
    fence,
    {
      nodeName: config.nodeName,
      log: getLogger(["vkubelet", "provider"]).with({ node: config.nodeName }),
      clock: deps.clock,
      internalIp,
      daemonPort: port,
      signal: stop.signal,
      // The provider's own clients (a second cluster, a cloud API) write only while we lead.
      fence,
    },
  );
  log.info("talking to {server} as configured by {source}", {
    server: kube.config.server,
    source: kube.config.source,
  });
  log.info("provider {provider} loaded with {capabilities}", {
    provider: config.provider,
    capabilities: providerCapabilities(provider).join(", ") || "no optional capabilities",
  });
  const onAbort = () => stop.abort(deps.signal.reason);
  deps.signal.addEventListener("abort", onAbort, { once: true });
  if (deps.signal.aborted) onAbort(); // Stopped while the provider was loading.
  const loops = new Loops(stop, log);
  // --rotate-server-certificates: the serving certificate is asked for now, once per process,
  // on the client leader election does not fence, so a standby has its own before it ever
  // takes over (issue 43).
  const serving = config.rotateServerCertificates
    ? sharedCertificates(
      servingCsrSource(config, { kube: reviews, clock: deps.clock, internalIp }),
      stop.signal,
    )
    : undefined;
  try {
    // ── Leader election (issue 21): a warm standby that runs the writers below (leadTerm)
    // only while it holds the lease; see app/leader_run.ts.
    if (fence) {
      await runLeaderElected({ ...config, port }, {
        signal: stop.signal,
        clock: deps.clock,
        kube,
        provider,
        fence,
        metrics,
        onReady: () => deps.onReady?.(provider),
        lead: (signal, fenced, warm) =>
          leadTerm({ ...config, port }, { ...deps, signal }, {
            kube,
            heartbeat,
            reviews,
            provider: fenced,
            internalIp,
            metrics,
            warm,
            certificates: serving,
          }),
      });
      log.info("shutting down");
      return;
    }
    // ── End of leader election.
    // A loop that fails while starting ends start-up too, instead of leaving it waiting.
    const starting = start({ ...config, port }, { ...deps, signal: stop.signal }, {
      kube,
      heartbeat,
      reviews,
      provider,
      internalIp,
      loops,
      metrics,
      certificates: serving,
    });
    starting.catch(() => {}); // Its failure after a stop is not news.
    await Promise.race([starting, abortion(stop.signal)]);
    if (!stop.signal.aborted) {
      log.info("vkubelet is ready");
      deps.onReady?.(provider);
      await abortion(stop.signal);
    }
    if (!loops.failure) log.info("shutting down");
  } catch (err) {
    // A stop asked for while starting is not a failure.
    if (!deps.signal.aborted && !loops.failure) throw err;
    if (!loops.failure) log.info("stopped while starting");
  } finally {
    stop.abort();
    deps.signal.removeEventListener("abort", onAbort);
    await drain(loops.all, deps.drainTimeoutMs ?? 10_000, deps.clock);
    await serving?.done;
    await provider.close?.();
    close();
    await identity?.stop();
    log.info("stopped");
  }
  // Like virtual-kubelet's nodeutil.Node.Run: when one controller ends, all of them stop.
  if (loops.failure) throw loops.failure;
}

/**
 * Checks what can be checked on this host and reads the kubeconfig, reporting every problem at
 * once; only then loads the provider, which may touch the host (directories, probes). Neither
 * talks to the cluster: the client connects on its first request.
 */
async function connectAndLoad(
  config: Config,
  deps: RunDeps,
  metrics: VkubeletMetrics,
  fence: LeadershipFence | undefined,
  providerDeps: Omit<ProviderDeps, "kube">,
): Promise<Clients & { provider: Provider; identity?: NodeIdentity }> {
  const checked = await preflight(config);
  const problems = [...checked.problems];
  let clients: Clients | undefined;
  let identity: NodeIdentity | undefined;
  try {
    // TLS bootstrap waits for a certificate only when every other check passed.
    identity = config.bootstrapKubeconfig && problems.length === 0
      ? await startNodeIdentity(config, {
        clock: deps.clock,
        signal: AbortSignal.any([deps.signal, providerDeps.signal]),
        hooks: deps.identityHooks,
      })
      : undefined;
    const connection = identity?.connection ??
      await loadKubeConfig({ kubeconfig: config.kubeconfig, clock: deps.clock });
    clients = createClients(connection, config, deps.clock, metrics, {
      beforeSend: fence?.guardRequest,
    });
  } catch (err) {
    if (!isKubeConfigError(err)) throw err;
    problems.push(err.message);
  }
  if (!clients || problems.length > 0) {
    clients?.close();
    await identity?.stop();
    // A port in use alone is worth a restart; with anything else the config needs fixing.
    const transient = checked.transient && problems.length === checked.problems.length;
    throw new StartupConfigError(problems, { transient });
  }
  const { kube } = clients;
  try {
    const provider = await (deps.loadProvider ?? loadProvider)({
      provider: config.provider,
      providerConfig: config.providerConfig,
      deps: { ...providerDeps, kube },
    });
    const haProblem = highAvailabilityProblem(config, provider);
    if (haProblem) {
      await provider.close?.();
      throw new StartupConfigError([haProblem]);
    }
    return { ...clients, provider, identity };
  } catch (err) {
    clients.close();
    await identity?.stop();
    if (err instanceof ProviderLoadError) throw new StartupConfigError([err.message]);
    throw err;
  }
}

interface Parts {
  kube: KubeClient;
  /** The Node's status and Lease go through it (see app/run_clients.ts). */
  heartbeat: KubeClient;
  /** The kubelet API's TokenReviews and SubjectAccessReviews. */
  reviews: KubeClient;
  provider: Provider;
  internalIp: string;
  loops: Loops;
  metrics: VkubeletMetrics;
  /** A standby's caches and provider health (`--leader-elect`); default their own. */
  warm?: WarmStandby;
  /** Filled with what to undo when the parts stop (a term's metrics collector). */
  cleanups?: (() => void)[];
  /** The serving certificate started at start-up, if it comes from a CSR. */
  certificates?: CertificateSource;
}

/** Starts the kubelet API, the node side and the pods, in that order, each awaited ready. */
async function start(config: Config, deps: RunDeps, parts: Parts): Promise<void> {
  const { kube, provider, internalIp, loops, metrics, warm } = parts;
  const { signal, clock } = deps;
  const { side, pods } = wireNode(config, {
    // Its own client, as the kubelet's heartbeat client: pod writes never delay a renewal.
    heartbeat: { client: parts.heartbeat },
    podApi: kube,
    provider,
    clock,
    metrics,
    internalIp,
    side: { health: warm?.health },
    pods: { caches: warm?.caches },
    tracer: deps.tracer,
  });
  const api = await createKubeletApiServer(config, {
    kube,
    reviews: parts.reviews,
    provider,
    clock,
    metrics,
    tracer: deps.tracer,
    internalIp,
    port: config.port,
    podCache: () => pods.pods(),
    certificates: parts.certificates,
  });
  const unobserve = observePodController(metrics, pods);
  parts.cleanups?.push(unobserve);
  if (config.metricsAddr) {
    const listener = await serveMetrics({
      address: parseHostPort(config.metricsAddr)!,
      metrics,
      health: side.health,
      log: getLogger(["vkubelet", "metrics"]).with({ node: config.nodeName }),
    }, signal);
    loops.add("metrics listener", listener.done);
  }
  // The kubelet API first, so the apiserver can reach it once the node says where it is.
  loops.add("kubelet API", api.run(signal));
  loops.add("node", side.run(signal));
  await withStartupTimeout(config, clock, side.ready, "the node to be registered");
  loops.add("pods", pods.run(signal));
  await withStartupTimeout(config, clock, pods.ready, "the pod caches to sync");
}

/**
 * One term of a leader under `--leader-elect`: the writers as {@link start} starts them (the
 * metrics listener runs for the whole process instead), until `deps.signal` aborts or one of
 * them fails (then the term ends with that failure).
 */
async function leadTerm(
  config: Config,
  deps: RunDeps,
  parts: Omit<Parts, "loops">,
): Promise<void> {
  const term = new AbortController();
  const onAbort = () => term.abort(deps.signal.reason);
  deps.signal.addEventListener("abort", onAbort, { once: true });
  if (deps.signal.aborted) onAbort();
  const loops = new Loops(term, getLogger(["vkubelet"]).with({ node: config.nodeName }));
  const cleanups: (() => void)[] = [];
  try {
    await start({ ...config, metricsAddr: undefined }, { ...deps, signal: term.signal }, {
      ...parts,
      loops,
      cleanups,
    });
    await abortion(term.signal);
  } finally {
    term.abort();
    deps.signal.removeEventListener("abort", onAbort);
    await drain(loops.all, deps.drainTimeoutMs ?? 10_000, deps.clock);
    for (const cleanup of cleanups) cleanup();
  }
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
