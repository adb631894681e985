/**
 * `--remote-pod-network`: remote pods on this node's pod network (issue #64). Reads the file
 * (the process provider's `network` section, plus where agents dial and what they run), and
 * builds what start-up wires: the providers' `podNetwork` handle (attach, detach), the kubelet
 * API's `/tunnel` endpoint, and a Services informer the {@link TunnelHost} pushes to the agents.
 * The host is made once the kubelet API has its serving certificate: agents pin it and the
 * kubeconfig's cluster CA (which signs kubelet-serving CSRs, and often `--tls-cert-file`), or
 * only `serverCaFile` when given; attach waits for it. Each node's attachments are kept in
 * `<stateDir>/attachments/<node>/`, so that adopted pods are reattached after a restart; the
 * node's gateway (the kubernetes provider's pods, `PodNetworkHandle.gateway`) keeps its
 * credential's hash there too.
 * @module
 */
import type { Node, Pod, Service } from "kubernetes-types/core/v1.d.ts";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { fileURLToPath as fromFileUrl } from "node:url";
import { basename, join } from "node:path";
import { getLogger, type Logger } from "../../base/log.ts";
import type { Config } from "../config/config.ts";
import type { Clock } from "../../base/clock.ts";
import type { Informer, KubeClient } from "../../k8s/mod.ts";
import type {
  PodNetworkAttachment,
  PodNetworkGateway,
  PodNetworkHandle,
  Provider,
} from "../../provider/mod.ts";
import {
  type ClusterService,
  type ServiceSource,
  TunnelHost,
  type TunnelNetwork,
} from "../../core/tunnel/host.ts";
import type { TunnelEndpoint } from "../../core/kubelet_api/mod.ts";
import type { CertificateSource } from "../../x509/mod.ts";
import { processConfigSchema } from "../../providers/process/config.ts";
import { loadNetworkConfig } from "../../providers/process/network/cni.ts";
import { PodNetworks } from "../../providers/process/network/pod_network.ts";
import { RemotePodNetworks } from "../../providers/process/network/tunnel_network.ts";

const absolute = z.string().refine((p) => p.startsWith("/"), { error: "must be an absolute path" });

/** The file's schema: the process provider's `network` section and the tunnel's own keys. */
export const remotePodNetworkSchema = processConfigSchema.shape.network.unwrap().extend({
  /** Where the pods' namespaces and relays are kept; default `<state dir>/remote-pods`. */
  stateDir: absolute.optional(),
  /** The URL agents dial; default `https://<node IP>:<kubelet API port>`. */
  serverUrl: z.url({ protocol: /^https$/ }).optional(),
  /** The CA agents trust for it; default the serving certificate and the cluster CA. */
  serverCaFile: absolute.optional(),
  /** The agent's program on the remote side, before `agent …`; default this vkubelet. */
  agentCommand: z.array(z.string().min(1)).min(1).optional(),
});

/** The parsed file. */
export type RemotePodNetworkConfig = z.output<typeof remotePodNetworkSchema>;

/** Reads and checks `--remote-pod-network`'s file; every problem in one message. */
export async function readRemotePodNetwork(path: string): Promise<RemotePodNetworkConfig> {
  let raw: unknown;
  try {
    raw = parseYaml(await Deno.readTextFile(path));
  } catch (err) {
    throw new RemotePodNetworkError(
      `--remote-pod-network ${path} cannot be read as YAML: ${(err as Error).message}`,
    );
  }
  const parsed = remotePodNetworkSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) =>
      `${i.path.join(".") || "(file)"}: ${i.message}`
    );
    throw new RemotePodNetworkError(
      `--remote-pod-network ${path} is not valid: ${problems.join("; ")}`,
    );
  }
  return parsed.data;
}

/** A problem with `--remote-pod-network` (start-up reports it as a config problem). */
export class RemotePodNetworkError extends Error {
  override name = "RemotePodNetworkError";
}

/**
 * This vkubelet as the remote side runs it: the binary, or under `deno run` the agent's own entry
 * (app/agent/main.ts, no npm imports) with the permissions it needs.
 */
export function defaultAgentProgram(): string[] {
  const exec = Deno.execPath();
  if (!basename(exec).startsWith("deno")) return [exec];
  const main = new URL("../agent/main.ts", import.meta.url);
  return [
    exec,
    "run",
    "--no-config",
    "--allow-net",
    "--allow-read",
    "--allow-write",
    "--allow-env",
    fromFileUrl(main),
  ];
}

/** Services from an informer, as the tunnel host reads them. */
export class InformedServices implements ServiceSource {
  readonly #listeners = new Set<() => void>();

  constructor(private readonly informer: Informer<Service>) {
    const changed = () => {
      for (const l of this.#listeners) l();
    };
    informer.on("add", changed);
    informer.on("update", changed);
    informer.on("delete", changed);
  }

  /** The namespace's Services that have a ClusterIP. */
  list(namespace: string): ClusterService[] {
    return this.informer.store.list().filter((s) => s.metadata?.namespace === namespace)
      .flatMap((s) => {
        const ip = s.spec?.clusterIP;
        if (!ip || ip === "None") return [];
        return [{
          namespace,
          name: s.metadata?.name ?? "",
          clusterIP: ip,
          ports: (s.spec?.ports ?? []).map((p) => ({
            port: p.port,
            protocol: p.protocol ?? "TCP",
            ...(p.name ? { name: p.name } : {}),
          })),
        }];
      });
  }

  /** Calls `changed` after any Service changes. */
  subscribe(changed: () => void): () => void {
    this.#listeners.add(changed);
    return () => this.#listeners.delete(changed);
  }
}

/** What {@link RemotePodTunnel} needs. */
export interface RemotePodTunnelDeps {
  network: TunnelNetwork;
  services: ServiceSource;
  log: Logger;
  serverUrl: string;
  clusterDomain?: string;
  /** The agent's program before `agent …`. */
  agentProgram: string[];
  /** The CA agents pin (`serverCaFile`): then the serving certificate is not pinned. */
  serverCaPem?: string;
  /** The cluster's CA, pinned beside the serving certificate (which it may have signed). */
  clusterCaPem?: string;
  /** Where this node's attachments are kept across restarts (`TunnelHostDeps.stateDir`). */
  attachmentsDir?: string;
  /** The file's `podCIDR`: the Node is registered with it when it has none. */
  podCIDR?: string;
  /** This node's CNI ranges, set from the Node's `spec.podCIDRs` ({@link observeNode}). */
  ranges?: { setPodCIDRs(cidrs: string[]): void };
}

/**
 * One node's tunnel: the providers' {@link PodNetworkHandle} and the kubelet API's endpoint.
 * The host is made by {@link serving} (or at once when the CA is known).
 */
export class RemotePodTunnel implements PodNetworkHandle, TunnelEndpoint {
  readonly #deps: RemotePodTunnelDeps;
  readonly #host = Promise.withResolvers<TunnelHost>();
  #made?: TunnelHost;

  constructor(deps: RemotePodTunnelDeps) {
    this.#deps = deps;
    if (deps.serverCaPem) this.#make(deps.serverCaPem);
  }

  /** The serving certificate as the kubelet API got it: agents pin it unless a CA was given. */
  serving(certPem: string): void {
    const cluster = this.#deps.clusterCaPem;
    this.#make(cluster ? `${certPem.trim()}\n${cluster.trim()}\n` : certPem);
  }

  /** `source`, telling {@link serving} each certificate it serves. */
  tap(source: CertificateSource): CertificateSource {
    return {
      run: (onPair, signal) =>
        source.run((pair) => {
          this.serving(pair.certPem);
          onPair(pair);
        }, signal),
    };
  }

  #make(caPem: string): void {
    if (this.#made) return;
    const { network, services, log, serverUrl, clusterDomain } = this.#deps;
    this.#made = new TunnelHost({
      network,
      services,
      log,
      serverUrl,
      serverCaPem: caPem,
      clusterDomain,
      stateDir: this.#deps.attachmentsDir,
    });
    this.#host.resolve(this.#made);
  }

  /** `PodNetworkHandle.attach`: the pod's IP, and the agent's command and credential. */
  async attach(pod: Pod): Promise<PodNetworkAttachment> {
    const host = await this.#host.promise;
    const attached = await host.attach(pod);
    return {
      podIP: attached.podIP,
      podIPs: attached.podIPs,
      agentCommand: [...this.#deps.agentProgram, ...attached.agentArgs],
      agentCredential: attached.agentCredential,
    };
  }

  /** `PodNetworkHandle.reattach`: an adopted pod attached before the restart, as it was. */
  async reattach(pod: Pod): Promise<PodNetworkAttachment | undefined> {
    const host = await this.#host.promise;
    const attached = await host.reattach(pod);
    return attached && {
      podIP: attached.podIP,
      podIPs: attached.podIPs,
      agentCommand: [...this.#deps.agentProgram, ...attached.agentArgs],
      agentCredential: attached.agentCredential,
    };
  }

  /**
   * `PodNetworkHandle.gateway`: the node's gateway for pods in another cluster's pod network;
   * its agent runs `agentCommand` (the file's, or this vkubelet) with `agent --gateway …`.
   */
  async gateway(options: { credential?: string } = {}): Promise<PodNetworkGateway> {
    const host = await this.#host.promise;
    const { agentArgs, ...gateway } = await host.gateway(options);
    return { ...gateway, agentCommand: [...this.#deps.agentProgram, ...agentArgs] };
  }

  /** `PodNetworkHandle.adopted`: detaches what was kept for pods gone while vkubelet was away. */
  async adopted(pods: Pod[]): Promise<void> {
    await (await this.#host.promise).adopted(pods);
  }

  /** `PodNetworkHandle.detach`. */
  async detach(pod: Pod): Promise<void> {
    await this.#made?.detach(pod);
  }

  /** The Node to register: the file's `podCIDR` when it has none (spec is written only then). */
  configureNode(node: Node): void {
    const podCIDR = this.#deps.podCIDR;
    if (podCIDR && !node.spec?.podCIDR && !node.spec?.podCIDRs?.length) {
      node.spec = { ...node.spec, podCIDR, podCIDRs: [podCIDR] };
    }
  }

  /** The Node as the server has it: its podCIDRs (the controller-manager's) are the pods'. */
  observeNode(node: Node): void {
    const cidrs = node.spec?.podCIDRs ?? (node.spec?.podCIDR ? [node.spec.podCIDR] : []);
    this.#deps.ranges?.setPodCIDRs(cidrs);
  }

  /** `/tunnel` on the kubelet API. */
  accept(upgrade: Parameters<TunnelHost["accept"]>[0]): Promise<Response | undefined> {
    if (!this.#made) {
      return Promise.resolve(new Response("The tunnel is not ready yet; retry\n", { status: 503 }));
    }
    return this.#made.accept(upgrade);
  }

  /** Ends the tunnels (pods' networks stay). */
  async close(): Promise<void> {
    await this.#made?.close();
  }
}

/**
 * `provider` with the node's tunnel in its Node: {@link RemotePodTunnel.configureNode} after the
 * provider's own, and {@link RemotePodTunnel.observeNode} beside its own.
 */
export function withTunnelNode(provider: Provider, tunnel: RemotePodTunnel): Provider {
  const configure = async (node: Node) => {
    await provider.configureNode?.(node);
    tunnel.configureNode(node);
  };
  const observe = (node: Node) => {
    tunnel.observeNode(node);
    provider.observeNode?.(node);
  };
  return new Proxy(provider, {
    get(target, name) {
      if (name === "configureNode") return configure;
      if (name === "observeNode") return observe;
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
    has: (target, name) =>
      name === "configureNode" || name === "observeNode" || Reflect.has(target, name),
  });
}

/** The nodes' tunnels and the Services informer they share. */
export interface Tunnels {
  byNode: Map<string, RemotePodTunnel>;
  /** Run it for the process's life: the agents' Service lists come from it. */
  informer: Informer<Service>;
}

/** `--remote-pod-network`'s tunnels for start-up, or none when it is not given. */
export async function remotePodTunnelsFor(
  config: Pick<Config, "remotePodNetwork" | "rotateServerCertificates">,
  options: { entries: { name: string; nodeIp: string }[]; port: number },
  kube: KubeClient,
  clock: Clock,
): Promise<Tunnels | undefined> {
  if (!config.remotePodNetwork) return undefined;
  const file = await readRemotePodNetwork(config.remotePodNetwork);
  const state = Deno.env.get("STATE_DIRECTORY")?.split(":")[0] ?? "/var/lib/vkubelet";
  const { tunnels, informer } = await remotePodTunnels({
    config: file,
    entries: options.entries,
    port: options.port,
    kube,
    clock,
    log: getLogger(["vkubelet", "tunnel"]),
    stateDir: state,
    clusterCaPem: kube.config.caCerts?.join("\n"),
  });
  return { byNode: tunnels, informer };
}

/** What {@link remotePodTunnels} needs from start-up. */
export interface TunnelStartup {
  config: RemotePodNetworkConfig;
  /** Each node's name and IP. */
  entries: { name: string; nodeIp: string }[];
  port: number;
  kube: KubeClient;
  clock: Clock;
  log: Logger;
  /** vkubelet's state directory (the pods' namespaces go under it unless the file says). */
  stateDir: string;
  /** The kubeconfig's cluster CA: it may have signed the serving certificate. */
  clusterCaPem?: string;
}

/**
 * Every node's {@link RemotePodTunnel} (one CNI network for the process), the Services informer
 * they share (run it with the process), or a {@link RemotePodNetworkError}.
 */
export async function remotePodTunnels(
  startup: TunnelStartup,
): Promise<{ tunnels: Map<string, RemotePodTunnel>; informer: Informer<Service> }> {
  const { config, log } = startup;
  const list = await loadNetworkConfig(config.cniConfDir);
  if (!list) {
    throw new RemotePodNetworkError(
      `--remote-pod-network: no CNI network configuration (.conflist, .conf or .json) in ${config.cniConfDir}; install one or fix cniConfDir`,
    );
  }
  const stateDir = config.stateDir ?? join(startup.stateDir, "remote-pods");
  const tooLong = RemotePodNetworks.stateDirProblem(stateDir);
  if (tooLong) throw new RemotePodNetworkError(`--remote-pod-network: ${tooLong}`);
  await Deno.mkdir(stateDir, { recursive: true, mode: 0o700 });
  const informer = startup.kube.services.informer({
    clock: startup.clock,
    name: "tunnel services",
  });
  const services = new InformedServices(informer);
  const caPem = config.serverCaFile ? await Deno.readTextFile(config.serverCaFile) : undefined;
  const tunnels = new Map(startup.entries.map((entry) => {
    // Each node's ranges are its own (the controller-manager gives each Node a podCIDR).
    const networks = new PodNetworks(config, list, {
      stateDir,
      log: log.with({ node: entry.name }),
      nodeIPs: () => [entry.nodeIp],
    });
    const tunnel = new RemotePodTunnel({
      network: new RemotePodNetworks(networks, stateDir),
      services,
      log: log.with({ node: entry.name }),
      serverUrl: config.serverUrl?.replace(/\/+$/, "") ??
        `https://${hostPort(entry.nodeIp, startup.port)}`,
      clusterDomain: config.clusterDomain || undefined,
      agentProgram: config.agentCommand ?? defaultAgentProgram(),
      serverCaPem: caPem,
      clusterCaPem: startup.clusterCaPem,
      attachmentsDir: join(stateDir, "attachments", entry.name),
      podCIDR: config.podCIDR,
      ranges: networks,
    });
    return [entry.name, tunnel] as const;
  }));
  log.info("remote pods join the pod network by CNI network {name} ({file}) through the tunnel", {
    name: list.name,
    file: list.file,
  });
  return { tunnels, informer };
}

function hostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}
