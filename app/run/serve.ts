/**
 * Serving the nodes, one (`--nodename`) or many (`--nodes`), on one path: a {@link NodeSet} of
 * them (one node is a set of one), the kubelet API listening for them and `/metrics`, started in
 * that order, each awaited ready. With `--nodes` the set shares its watches
 * (`../node_sharing.ts`), which run for the whole process. Under `--leader-elect` the process is
 * a warm standby of the set (`../leader_run.ts`): a fresh set, from the standby's caches, runs
 * for each term it leads.
 * @module
 */
import { getLogger } from "../../base/log.ts";
import type { KubeClient } from "../../k8s/mod.ts";
import { KubeletServer } from "../../core/kubelet_api/mod.ts";
import { createStreamingHandler } from "../../core/kubelet_api/streaming/handler.ts";
import { type CertificateSource, sharedCertificates } from "../../x509/mod.ts";
import type { Config } from "../config/config.ts";
import { parseHostPort } from "../config/schema.ts";
import { observePodController, serveMetrics } from "../metrics_server.ts";
import { runLeaderElected, type WarmStandby } from "../leader_run.ts";
import { type NodeEntry, NodeSet, type NodeSetDeps } from "../node_set.ts";
import { NodeSharing } from "../node_sharing.ts";
import {
  clientCa,
  reviewersFor,
  servingCsrSource,
  sharedServingCertificate,
} from "./kubelet_api.ts";
import { drain, Loops } from "./loops.ts";
import { abortion, type ServeContext, withStartupTimeout } from "./parts.ts";

/** Serves every node of `ctx.entries` until `ctx.deps.signal` aborts; see the module doc. */
export async function serveNodes(ctx: ServeContext): Promise<void> {
  const { config, deps, entries, loaded, fence, loops, log } = ctx;
  const { signal, clock } = deps;
  const firstProvider = loaded.providers.get(entries[0].name)!;
  const sharing = config.nodes.length > 0
    ? new NodeSharing({ kube: loaded.kube, heartbeat: loaded.heartbeat, clock })
    : undefined;
  if (sharing) loops.add("shared watches", sharing.run(signal));
  if (loaded.tunnels) loops.add("tunnel services", loaded.tunnels.informer.run(signal));
  // --rotate-server-certificates: each node's serving certificate is asked for now, once per
  // process, on the client leader election does not fence, so a standby has its own before it
  // ever takes over (issue 43).
  const serving = config.rotateServerCertificates
    ? new Map(entries.map((entry) => {
      const source = servingCsrSource(config, entry, { kube: loaded.reviews, clock });
      const shared = sharedCertificates(source, signal);
      ctx.atExit.push(() => shared.done);
      return [entry.name, shared];
    }))
    : undefined;
  const parts: Parts = { ...ctx, sharing, serving, auth: await authFor(config, loaded) };
  // ── Leader election (issue 21): a warm standby that runs the nodes (leadTerm) only while it
  // holds the lease; see app/leader_run.ts.
  if (fence) {
    await runLeaderElected(config, {
      signal,
      clock,
      kube: loaded.kube,
      nodes: entries.map((entry) => ({
        name: entry.name,
        provider: loaded.providers.get(entry.name)!,
        podApi: sharing?.podApi(entry.name) ?? loaded.kube,
        configSources: sharing?.configSources,
      })),
      fence,
      metrics: ctx.metrics,
      onReady: () => deps.onReady?.(firstProvider),
      lead: (term, warm) => leadTerm(parts, term, warm),
    });
    return;
  }
  // ── End of leader election.
  // A loop that fails while starting ends start-up too, instead of leaving it waiting.
  const starting = start(parts, signal, loops, undefined, []);
  starting.catch(() => {}); // Its failure after a stop is not news.
  await Promise.race([starting, abortion(signal)]);
  if (signal.aborted) return;
  if (entries.length === 1) log.info("vkubelet is ready");
  else log.info("vkubelet is ready: {count} nodes", { count: entries.length });
  deps.onReady?.(firstProvider);
  await abortion(signal);
}

/** What {@link start} needs: the context and what start-up made once for the process. */
interface Parts extends ServeContext {
  sharing?: NodeSharing;
  /** Each node's CSR-issued serving certificate, started at start-up. */
  serving?: Map<string, CertificateSource>;
  auth: NodeSetDeps["apiBase"]["auth"];
}

/**
 * Starts the nodes' set, the kubelet API and `/metrics`, and waits until the nodes are
 * registered and their pod caches synced; fills `cleanups` with what to undo when they stop.
 */
async function start(
  parts: Parts,
  signal: AbortSignal,
  loops: Loops,
  warm: Map<string, WarmStandby> | undefined,
  cleanups: (() => void)[],
): Promise<void> {
  const { config, deps, entries, loaded, metrics } = parts;
  const { clock, tracer } = deps;
  const set = new NodeSet(config, {
    ...loaded,
    entries,
    clock,
    metrics,
    tracer,
    sharing: parts.sharing,
    warm,
    apiBase: {
      clock,
      metrics,
      tracer,
      auth: parts.auth,
      streaming: createStreamingHandler({
        log: getLogger(["vkubelet", "streaming"]),
        clock,
        streamIdleTimeoutMs: config.streamIdleTimeout,
        streamCreationTimeoutMs: config.streamCreationTimeout,
      }),
    },
  });
  deps.onNodeSet?.(set);
  const servers = kubeletServers(parts, set);
  cleanups.push(observePodController(metrics, set));
  // Under --leader-elect the standby serves /metrics for the whole process (leader_run.ts).
  if (config.metricsAddr && !warm) {
    const listener = await serveMetrics({
      address: parseHostPort(config.metricsAddr)!,
      metrics,
      health: set.health,
      log: getLogger(["vkubelet", "metrics"]).with(nodesOf(entries)),
    }, signal);
    loops.add("metrics listener", listener.done);
  }
  // The kubelet API first, so the apiserver can reach it once a node says where it is.
  for (const server of servers) loops.add("kubelet API", server.run(signal));
  loops.add("nodes", set.run(signal));
  const nodes = entries.length === 1 ? "the node" : `${entries.length} nodes`;
  await withStartupTimeout(config, clock, set.registered, `${nodes} to be registered`);
  // A CSR-issued certificate may wait for an approver that checks the node first.
  const listening = parts.serving ? [] : servers.map((s) => s.ready);
  await withStartupTimeout(
    config,
    clock,
    Promise.all([set.ready, ...listening]).then(() => {}),
    "the pod caches to sync and the kubelet API to listen",
  );
}

/**
 * The kubelet API, one server per serving certificate: the files or a self-signed certificate
 * name every node, and one server listens on every node's address (one node: on
 * `--listen-address`); a CSR-issued certificate names one node, and its server listens on that
 * node's address. The apiserver dials a node's address, so a connection's local address names
 * its node.
 */
function kubeletServers(parts: Parts, set: NodeSet): KubeletServer[] {
  const { config, deps, entries, serving } = parts;
  const several = config.nodes.length > 0;
  const address = (entry: NodeEntry) => several ? entry.nodeIp : config.listenAddress;
  // --remote-pod-network: /tunnel of each node, and the certificate its agents pin.
  const tunnels = parts.loaded.tunnels?.byNode;
  const tapped = (served: NodeEntry[], source: CertificateSource) =>
    served.reduce((s, e) => tunnels?.get(e.name)?.tap(s) ?? s, source);
  const withTunnel = (name: string) => {
    const deps = set.apiDeps(name);
    const tunnel = tunnels?.get(name);
    return deps && tunnel ? { ...deps, tunnel } : deps;
  };
  const server = (served: NodeEntry[], certificates: CertificateSource) =>
    new KubeletServer({
      auth: parts.auth,
      log: getLogger(["vkubelet", "kubelet-api"]).with(nodesOf(served)),
      port: config.port,
      hostnames: served.map(address),
      certificates: tapped(served, certificates),
      nodeAt: served.length === 1
        ? () => withTunnel(served[0].name)
        : (at) => withTunnel(set.apiDepsAt(at)?.nodeName ?? ""),
    });
  if (serving) return entries.map((entry) => server([entry], serving.get(entry.name)!));
  return [server(entries, sharedServingCertificate(config, entries, deps.clock))];
}

/**
 * One term of a leader under `--leader-elect`: the nodes as {@link start} starts them, until
 * `signal` aborts or one of their loops fails (then the term ends with that failure).
 */
async function leadTerm(
  parts: Parts,
  signal: AbortSignal,
  warm: Map<string, WarmStandby>,
): Promise<void> {
  const term = new AbortController();
  const onAbort = () => term.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  if (signal.aborted) onAbort();
  const loops = new Loops(term, parts.log);
  const cleanups: (() => void)[] = [];
  try {
    await start(parts, term.signal, loops, warm, cleanups);
    await abortion(term.signal);
  } finally {
    term.abort();
    signal.removeEventListener("abort", onAbort);
    await drain(loops.all, parts.deps.drainTimeoutMs ?? 10_000, parts.deps.clock);
    for (const cleanup of cleanups) cleanup();
  }
  if (loops.failure) throw loops.failure;
}

/** Authentication and authorization, as every node has them (./kubelet_api.ts). */
async function authFor(config: Config, clients: { kube: KubeClient; reviews: KubeClient }) {
  return {
    clientCaPem: await clientCa(config, clients.kube, getLogger(["vkubelet", "kubelet-api"])),
    anonymous: config.anonymousAuth,
    ...reviewersFor(config, clients.reviews),
  };
}

/** A log's key for these nodes: the node's name, or how many. */
function nodesOf(entries: NodeEntry[]): Record<string, string | number> {
  return entries.length === 1 ? { node: entries[0].name } : { nodes: entries.length };
}
