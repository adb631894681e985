/**
 * The composition of one process serving several nodes (`--nodes`): one kubeconfig, one client
 * (plus the heartbeat and review clients of app/run_clients.ts), a provider per node, one kubelet API port
 * listening on every node's address, and a {@link NodeSet} running every node's controllers.
 * See docs/multinode.md for what is shared and why.
 * @module
 */
import type { Config } from "./config/config.ts";
import type { RunDeps } from "./run.ts";
import { getLogger } from "../base/log.ts";
import { isKubeConfigError, type KubeClient, loadKubeConfig } from "../k8s/mod.ts";
import type { Provider } from "../provider/mod.ts";
import { VkubeletMetrics } from "../core/metrics.ts";
import { nodeApiFromClient } from "../core/node/mod.ts";
import { KubeletServer } from "../core/kubelet_api/mod.ts";
import { fileCertificates, selfSignedCertificate } from "../x509/mod.ts";
import { clientCa, reviewersFor } from "./run_kubelet_api.ts";
import { type Clients, createClients } from "./run_clients.ts";
import { createStreamingHandler } from "../core/kubelet_api/streaming/handler.ts";
import { loadProvider, ProviderLoadError } from "./provider_loader.ts";
import { observePodController, serveMetrics } from "./metrics_server.ts";
import { parseHostPort } from "./config/schema.ts";
import { cachedNodeReads, Gate } from "./heartbeat_api.ts";
import { type NodeEntry, NodeSet } from "./node_set.ts";
import { abortion, freePort, StartupConfigError, withStartupTimeout } from "./run_parts.ts";
import { drain, type Loop } from "./run_loops.ts";

/** Node and lease calls in flight at once across all nodes. */
const HEARTBEAT_CONCURRENCY = 64;

/** Runs every node of `config.nodes` until `deps.signal` aborts; rejects if start-up fails. */
export async function runNodeSet(config: Config, deps: RunDeps): Promise<void> {
  const log = getLogger(["vkubelet"]).with({ nodes: config.nodes.length });
  const entries = config.nodes as NodeEntry[];
  const port = config.port === 0 ? freePort(entries[0].nodeIp) : config.port;
  const stop = new AbortController();
  const metrics = new VkubeletMetrics();
  metrics.leader.set(1);
  for (const entry of entries) metrics.standard.nodeName.set({ node: entry.name }, 1);
  const { kube, heartbeat, reviews, providers, close } = await connectAndLoad(
    config,
    deps,
    metrics,
    port,
    stop,
  );
  const onAbort = () => stop.abort(deps.signal.reason);
  deps.signal.addEventListener("abort", onAbort, { once: true });
  if (deps.signal.aborted) onAbort();
  const loops: Loop[] = [];
  try {
    const auth = await authFor(config, kube, reviews);
    const nodes = heartbeat.nodes.informer({
      labelSelector: "type=virtual-kubelet",
      clock: deps.clock,
      name: "virtual nodes",
    });
    loops.push({ name: "node watch", done: nodes.run(stop.signal) });
    const set = new NodeSet(config, {
      kube,
      heartbeat: cachedNodeReads(nodeApiFromClient(heartbeat), nodes),
      heartbeatSlots: new Gate(HEARTBEAT_CONCURRENCY),
      clock: deps.clock,
      metrics,
      tracer: deps.tracer,
      providers,
      apiBase: {
        clock: deps.clock,
        metrics,
        tracer: deps.tracer,
        auth,
        streaming: createStreamingHandler({
          log: getLogger(["vkubelet", "streaming"]),
          clock: deps.clock,
          streamIdleTimeoutMs: config.streamIdleTimeout,
          streamCreationTimeoutMs: config.streamCreationTimeout,
        }),
      },
    });
    deps.onNodeSet?.(set);
    const api = new KubeletServer({
      auth,
      log: getLogger(["vkubelet", "kubelet-api"]),
      port,
      hostnames: entries.map((e) => e.nodeIp),
      certificates: certificatesFor(config, entries, deps),
      nodeAt: (address) => set.apiDepsAt(address),
    });
    observePodController(metrics, set);
    if (config.metricsAddr) {
      const listener = await serveMetrics({
        address: parseHostPort(config.metricsAddr)!,
        metrics,
        health: set.health,
        log: getLogger(["vkubelet", "metrics"]),
      }, stop.signal);
      loops.push({ name: "metrics listener", done: listener.done });
    }
    loops.push({ name: "kubelet API", done: api.run(stop.signal) });
    await withStartupTimeout(config, deps.clock, api.ready, "the kubelet API to listen");
    loops.push({ name: "nodes", done: set.run(stop.signal) });
    await withStartupTimeout(
      config,
      deps.clock,
      set.ready,
      `${entries.length} nodes to be registered and their pod caches to sync`,
    );
    log.info("vkubelet is ready: {count} nodes", { count: entries.length });
    deps.onReady?.(providers.get(entries[0].name)!);
    await abortion(stop.signal);
    log.info("shutting down");
  } catch (err) {
    if (!deps.signal.aborted) throw err;
    log.info("stopped while starting");
  } finally {
    stop.abort();
    deps.signal.removeEventListener("abort", onAbort);
    await drain(loops, deps.drainTimeoutMs ?? 10_000, deps.clock);
    await Promise.all([...providers.values()].map((p) => p.close?.()));
    close();
    log.info("stopped");
  }
}

/** The kubeconfig, both clients and every node's provider, or every problem at once. */
async function connectAndLoad(
  config: Config,
  deps: RunDeps,
  metrics: VkubeletMetrics,
  port: number,
  stop: AbortController,
): Promise<Clients & { providers: Map<string, Provider> }> {
  const problems: string[] = [];
  let clients: Clients | undefined;
  try {
    const connection = await loadKubeConfig({ kubeconfig: config.kubeconfig, clock: deps.clock });
    clients = createClients(connection, config, deps.clock, metrics);
  } catch (err) {
    if (!isKubeConfigError(err)) throw err;
    problems.push(err.message);
  }
  const providers = new Map<string, Provider>();
  const loaded = await Promise.allSettled((config.nodes as NodeEntry[]).map(async (entry) => {
    const provider = await (deps.loadProvider ?? loadProvider)({
      provider: config.provider,
      providerConfig: entry.providerConfig ?? config.providerConfig,
      deps: {
        nodeName: entry.name,
        log: getLogger(["vkubelet", "provider"]).with({ node: entry.name }),
        clock: deps.clock,
        internalIp: entry.nodeIp,
        daemonPort: port,
        signal: stop.signal,
        kube: clients?.kube,
      },
    });
    providers.set(entry.name, provider);
  }));
  for (const [i, result] of loaded.entries()) {
    if (result.status === "fulfilled") continue;
    if (!(result.reason instanceof ProviderLoadError)) throw result.reason;
    // A node's own provider config is named with the node; the shared one's problem once.
    const entry = (config.nodes as NodeEntry[])[i];
    const message = entry.providerConfig
      ? `node ${entry.name}: ${result.reason.message}`
      : result.reason.message;
    if (!problems.includes(message)) problems.push(message);
  }
  if (!clients || problems.length > 0) {
    clients?.close();
    await Promise.all([...providers.values()].map((p) => p.close?.()));
    throw new StartupConfigError(problems);
  }
  return { ...clients, providers };
}

/** Authentication and authorization as one node has them (app/run_kubelet_api.ts). */
async function authFor(config: Config, kube: KubeClient, reviews: KubeClient) {
  return {
    clientCaPem: await clientCa(config, kube, getLogger(["vkubelet", "kubelet-api"])),
    anonymous: config.anonymousAuth,
    ...reviewersFor(config, reviews),
  };
}

/** One serving certificate for every node: the files given, or self-signed for all addresses. */
function certificatesFor(config: Config, entries: NodeEntry[], deps: RunDeps) {
  const log = getLogger(["vkubelet", "kubelet-api"]);
  if (config.tlsCertFile) {
    return fileCertificates({
      certFile: config.tlsCertFile,
      keyFile: config.tlsPrivateKeyFile!,
      clock: deps.clock,
      log,
    });
  }
  return selfSignedCertificate({
    nodeName: entries[0].name,
    dnsNames: entries.map((e) => e.name),
    ipAddresses: entries.map((e) => e.nodeIp),
    clock: deps.clock,
    log,
  });
}
