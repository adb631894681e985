/**
 * Start-up's first step, the same for one node and for many (`--nodes`): the nodes to serve
 * (one node is a list of one, as KWOK runs one node), the host checks, the kubeconfig (or a
 * client certificate from TLS bootstrap), the clients and a provider for every node — every
 * problem reported at once, before anything touches the cluster.
 * @module
 */
import type { Config } from "../config/config.ts";
import { getLogger } from "../../base/log.ts";
import type { Provider } from "../../provider/mod.ts";
import { isKubeConfigError, loadKubeConfig } from "../../k8s/mod.ts";
import type { LeadershipFence } from "../../k8s/leader_election/mod.ts";
import type { VkubeletMetrics } from "../../core/metrics.ts";
import { EventRecorder } from "../../core/pods/mod.ts";
import { loadProvider, ProviderLoadError } from "../provider_loader.ts";
import { podLogDirOf, resolvePodLogDir } from "../config/pod_logs.ts";
import { type NodeIdentity, startNodeIdentity } from "../node_identity.ts";
import { highAvailabilityProblem } from "../leader_run.ts";
import { preflight } from "../preflight.ts";
import type { NodeEntry } from "../node_set.ts";
import { type Clients, createClients } from "./clients.ts";
import { StartupConfigError } from "./parts.ts";
import { remotePodTunnelsFor, type Tunnels, withTunnelNode } from "./tunnel.ts";
import type { RunDeps } from "./mod.ts";

/**
 * The nodes this process serves: the entries of `--nodes`, or the one node of `--nodename`
 * (at `--node-ip`, else the host's InternalIP), with no labels beyond `--node-labels`.
 */
export function nodeEntries(config: Config, deps: Pick<RunDeps, "detectInternalIp">): NodeEntry[] {
  if (config.nodes.length > 0) return config.nodes as NodeEntry[];
  return [{ name: config.nodeName, nodeIp: config.nodeIp ?? deps.detectInternalIp(), labels: {} }];
}

/** What {@link connectAndLoad} needs besides the config. */
export interface LoadOptions {
  entries: NodeEntry[];
  /** The kubelet API's port, resolved already when the config says 0. */
  port: number;
  metrics: VkubeletMetrics;
  /** `--leader-elect`: every write of the clients and the providers waits for the lease. */
  fence?: LeadershipFence;
  /** Aborts when start-up fails or the process stops; handed to the providers. */
  signal: AbortSignal;
}

/** The clients, a provider per node (by name) and the TLS bootstrap identity, if any. */
export interface Loaded extends Clients {
  providers: Map<string, Provider>;
  /** Each node's event recorder, by node name: its provider's and its pod controller's. */
  recorders: Map<string, EventRecorder>;
  identity?: NodeIdentity;
  /** `--remote-pod-network`: each node's tunnel and the Services informer they share. */
  tunnels?: Tunnels;
}

/**
 * Checks what can be checked on this host and reads the kubeconfig, reporting every problem at
 * once; only then loads the providers, which may touch the host (directories, probes). Neither
 * talks to the cluster: the client connects on its first request.
 */
export async function connectAndLoad(
  config: Config,
  deps: RunDeps,
  options: LoadOptions,
): Promise<Loaded> {
  // The host checks bind --port on --listen-address: with --nodes the API listens on each
  // node's address instead, where another process may serve other addresses on the same port.
  const checked = config.nodes.length === 0
    ? await preflight(config)
    : { problems: [], transient: false };
  const problems = [...checked.problems];
  let clients: Clients | undefined;
  let identity: NodeIdentity | undefined;
  try {
    // TLS bootstrap (one node only) waits for a certificate only when every other check passed.
    identity = config.bootstrapKubeconfig && problems.length === 0
      ? await startNodeIdentity(config, {
        clock: deps.clock,
        signal: AbortSignal.any([deps.signal, options.signal]),
        hooks: deps.identityHooks,
      })
      : undefined;
    const connection = identity?.connection ??
      await loadKubeConfig({ kubeconfig: config.kubeconfig, clock: deps.clock });
    clients = createClients(connection, config, deps.clock, options.metrics, {
      beforeSend: options.fence?.guardRequest,
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
  const providers = new Map<string, Provider>();
  const recorders = new Map(
    options.entries.map((entry) => [entry.name, nodeRecorder(entry, deps, clients)]),
  );
  let tunnels: Tunnels | undefined;
  try {
    tunnels = await remotePodTunnelsFor(config, options, clients.kube, deps.clock).catch((err) => {
      if (err?.name !== "RemotePodNetworkError") throw err;
      problems.push(err.message);
      return undefined;
    });
    const nodes = { providers, recorders, tunnels };
    problems.push(...await loadProviders(config, deps, options, clients, nodes));
    const haProblem = problems.length === 0
      ? highAvailabilityProblem(config, providers.values().next().value!)
      : undefined;
    if (haProblem) problems.push(haProblem);
    if (problems.length > 0) throw new StartupConfigError(problems);
    return { ...clients, providers, recorders, identity, tunnels };
  } catch (err) {
    await Promise.all([...providers.values()].map((p) => p.close?.()));
    clients.close();
    await identity?.stop();
    throw err;
  }
}

/**
 * The node's event recorder, made before its provider so that both record through it: one rate
 * limit and one aggregation per pod, whoever records (the kubelet has one recorder per node).
 */
function nodeRecorder(entry: NodeEntry, deps: RunDeps, clients: Clients): EventRecorder {
  return new EventRecorder({
    api: clients.kube.events,
    clock: deps.clock,
    log: getLogger(["vkubelet", "pods"]).with({ node: entry.name }),
    nodeName: entry.name,
  });
}

/** Loads every node's provider into `providers`; the load problems, each once. */
async function loadProviders(
  config: Config,
  deps: RunDeps,
  options: LoadOptions,
  clients: Clients,
  nodes: Pick<Loaded, "providers" | "recorders" | "tunnels">,
): Promise<string[]> {
  const { providers, recorders } = nodes;
  const problems: string[] = [];
  const logDir = await resolvePodLogDir(config, Deno.env.toObject(), getLogger(["vkubelet"]));
  const loaded = await Promise.allSettled(options.entries.map(async (entry) => {
    const provider = await (deps.loadProvider ?? loadProvider)({
      provider: config.provider,
      providerConfig: entry.providerConfig ?? config.providerConfig,
      deps: {
        nodeName: entry.name,
        log: getLogger(["vkubelet", "provider"]).with({ node: entry.name }),
        clock: deps.clock,
        internalIp: entry.nodeIp,
        daemonPort: options.port,
        signal: options.signal,
        kube: clients.kube,
        // The provider's own clients (a second cluster, a cloud API) write only while we lead.
        fence: options.fence,
        events: recorders.get(entry.name),
        podLogs: logDir
          ? podLogDirOf(logDir, config, { nodeName: entry.name, clock: deps.clock })
          : undefined,
        podNetwork: nodes.tunnels?.byNode.get(entry.name),
      },
    });
    const tunnel = nodes.tunnels?.byNode.get(entry.name);
    providers.set(entry.name, tunnel ? withTunnelNode(provider, tunnel) : provider);
  }));
  for (const [i, result] of loaded.entries()) {
    if (result.status === "fulfilled") continue;
    if (!(result.reason instanceof ProviderLoadError)) throw result.reason;
    // A node's own provider config is named with the node; the shared one's problem once.
    const entry = options.entries[i];
    const message = entry.providerConfig
      ? `node ${entry.name}: ${result.reason.message}`
      : result.reason.message;
    if (!problems.includes(message)) problems.push(message);
  }
  return problems;
}
