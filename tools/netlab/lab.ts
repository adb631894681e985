/**
 * The network lab: two test hosts (network namespaces, ./hosts.ts), each a vkubelet node with
 * the process provider and CNI, joined by flannel (vxlan), with kube-proxy on each (nftables on
 * host 1, iptables on host 2) and CoreDNS behind the cluster DNS Service, against a private
 * control plane whose Service range pods can reach (`cluster --name netlab up
 * --service-range=198.18.96.0/24`). Root only. Disposing it removes everything it made:
 * pods on its nodes, processes, namespaces, Nodes and the DNS Service.
 *
 * ```ts
 * await using lab = await startNetlab();
 * // lab.cluster, lab.nodes[0].name, lab.nodes[1].host.podCidr, ...
 * ```
 * @module
 */
import { type TestCluster, useCluster } from "../cluster/harness.ts";
import type { Background } from "./background.ts";
import { ensureCoreDns, ensureFlannel, ensureKubeProxy } from "./build.ts";
import { run, tryRun, waitUntil } from "./command.ts";
import { startCoreDns, startFlannel, startKubeProxy, waitForFlannelRoute } from "./components.ts";
import { makeHosts, NETLAB_ADDRESSES, type TestHosts } from "./hosts.ts";
import { type NetlabNode, startNetlabNode } from "./node.ts";
import { killPodProcesses } from "./sweep.ts";

const repoRoot = new URL("../../", import.meta.url).pathname;

/** The private cluster the lab runs against. */
export const NETLAB_CLUSTER = "netlab";

/** A running lab. */
export interface Netlab extends AsyncDisposable {
  cluster: TestCluster;
  /** Node 1 in host 1, node 2 in host 2. */
  nodes: [NetlabNode, NetlabNode];
  /** The lab's directory (every log is under it). */
  dir: string;
  /** The reference CNI plugins' directory the nodes use (`network.cniBinDir`). */
  cniBinDir: string;
  /** The end of every component's log, for a failing test's message. */
  logs(): Promise<string>;
}

/** Why the lab cannot run here, or undefined. */
export function netlabSkipReason(): string | undefined {
  if (Deno.uid() !== 0) return "needs root (network namespaces)";
  for (const tool of ["ip", "nft", "iptables", "socat", "curl", "nsenter", "go"]) {
    const found = (Deno.env.get("PATH") ?? "").split(":").some((dir) => {
      try {
        return Deno.statSync(`${dir}/${tool}`).isFile;
      } catch {
        return false;
      }
    });
    if (!found) return `needs ${tool} on PATH`;
  }
  return undefined;
}

/** The reference CNI plugins, built once by the process provider's script. */
async function cniBinDir(): Promise<string> {
  return await run(["bash", `${repoRoot}tools/network/build_cni.sh`]);
}

/** Starts the lab (building its components first if needed); see the module doc. */
export async function startNetlab(
  options: { progress?: (line: string) => void } = {},
): Promise<Netlab> {
  const progress = options.progress ?? (() => {});
  const [kubeProxy, coreDns, flanneld, cniBin] = [
    await ensureKubeProxy({ progress }),
    await ensureCoreDns({ progress }),
    await ensureFlannel({ progress }),
    await cniBinDir(),
  ];
  const cluster = await useCluster(NETLAB_CLUSTER, {
    serviceRange: NETLAB_ADDRESSES.serviceRange,
  });
  const dir = await Deno.makeTempDir({ prefix: "vk-netlab-" });
  const prefix = `vkn${Deno.pid % 100000}`;
  const started: Background[] = [];
  const nodes: NetlabNode[] = [];
  let hosts: TestHosts | undefined;
  const stop = async () => {
    for (const node of nodes) await deletePodsOn(cluster, node.name);
    for (const process of started.reverse()) await process.stop();
    for (const node of nodes) {
      await killPodProcesses(node.stateDir);
      await cluster.kubectl(["delete", "node", node.name, "--ignore-not-found", "--wait=false"]);
    }
    await cluster.kubectl([
      "-n",
      "kube-system",
      "delete",
      "service,endpointslice",
      "-l",
      `netlab=${prefix}`,
      "--ignore-not-found",
    ]);
    await hosts?.remove();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    hosts = await makeHosts({ dir, prefix, server: cluster.server });
    for (const host of hosts.hosts) {
      const node = await startNetlabNode(cluster, host, {
        nodeName: `${prefix}-n${host.index}`,
        cniBinDir: cniBin,
      });
      nodes.push(node);
      started.push(node.process);
    }
    progress(`nodes ${nodes.map((n) => n.name).join(", ")} are Ready`);
    const admin = await Promise.all(
      hosts.hosts.map((host) => host.localKubeconfig(cluster.kubeconfigPath, "admin")),
    );
    const flannels = [];
    for (const [i, node] of nodes.entries()) {
      flannels.push(await startFlannel(node.host, node.name, admin[i], flanneld));
      started.push(flannels[i]);
    }
    for (const [i, node] of nodes.entries()) {
      await waitForFlannelRoute(node.host, flannels[i], nodes[1 - i].host.podCidr);
    }
    progress("flannel routes each host's pod CIDR to the other");
    await createDnsService(cluster, prefix, nodes[0]);
    const modes = ["nftables", "iptables"] as const;
    for (const [i, node] of nodes.entries()) {
      started.push(await startKubeProxy(node.host, node.name, admin[i], kubeProxy, modes[i]));
    }
    started.push(await startCoreDns(nodes[0].host, admin[0], coreDns));
    await waitForServiceRules(nodes, NETLAB_ADDRESSES.dnsIp);
    progress("kube-proxy and CoreDNS are up");
  } catch (err) {
    const logs = await tails(started);
    await stop();
    throw new Error(`the network lab did not start: ${err}\n${logs}`, { cause: err });
  }
  return {
    cluster,
    nodes: nodes as [NetlabNode, NetlabNode],
    dir,
    cniBinDir: cniBin,
    logs: () => tails(started),
    [Symbol.asyncDispose]: stop,
  };
}

/** The end of each process's log, for a failing test's message. */
export async function tails(processes: Background[]): Promise<string> {
  const parts = await Promise.all(
    processes.map(async (p) => `--- ${p.name} (${p.log})\n${await p.tail(15)}`),
  );
  return parts.join("\n");
}

/**
 * The cluster DNS Service (`kube-system/kube-dns` at the `dnsIp` of the node's lab, the
 * `--cluster-dns` address), its endpoint CoreDNS on the node's host. The slice names the node:
 * kube-proxy's nftables mode treats an endpoint as local (hairpin masquerade) only when its
 * nodeName is its `--hostname-override`.
 */
export async function createDnsService(
  cluster: TestCluster,
  prefix: string,
  node: NetlabNode,
) {
  const labels = { netlab: prefix };
  const ports = [
    { name: "dns", port: 53, protocol: "UDP" },
    { name: "dns-tcp", port: 53, protocol: "TCP" },
  ];
  const objects = {
    apiVersion: "v1",
    kind: "List",
    items: [{
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "kube-dns", namespace: "kube-system", labels },
      spec: {
        clusterIP: node.host.addresses.dnsIp,
        ports: ports.map((p) => ({ ...p, targetPort: 53 })),
      },
    }, {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: `kube-dns-${prefix}`,
        namespace: "kube-system",
        labels: { ...labels, "kubernetes.io/service-name": "kube-dns" },
      },
      addressType: "IPv4",
      ports,
      endpoints: [{
        addresses: [node.host.underlayIp],
        nodeName: node.name,
        conditions: { ready: true },
      }],
    }],
  };
  const res = await cluster.kubectl(["apply", "-f", "-"], { stdin: JSON.stringify(objects) });
  if (res.code !== 0) throw new Error(`creating the cluster DNS Service: ${res.stderr}`);
}

/** Waits until both hosts' kube-proxies have programmed `clusterIp`. */
async function waitForServiceRules(nodes: NetlabNode[], clusterIp: string) {
  await waitUntil(`kube-proxy rules for ${clusterIp} in both hosts`, async () => {
    const nft = await tryRun([
      "ip",
      "netns",
      "exec",
      nodes[0].host.netns,
      "nft",
      "list",
      "ruleset",
    ]);
    const ipt = await tryRun([
      "ip",
      "netns",
      "exec",
      nodes[1].host.netns,
      "iptables-save",
      "-t",
      "nat",
    ]);
    return nft.stdout.includes(`${clusterIp} . udp . 53`) && ipt.stdout.includes(`${clusterIp}/32`);
  }, { timeoutMs: 60_000 });
}

/** Deletes every pod bound to `nodeName` and waits until vkubelet has removed them. */
async function deletePodsOn(cluster: TestCluster, nodeName: string): Promise<void> {
  const selector = `spec.nodeName=${nodeName}`;
  await cluster.kubectl([
    "delete",
    "pods",
    "-A",
    "--field-selector",
    selector,
    "--wait=true",
    "--timeout=60s",
  ]);
}
