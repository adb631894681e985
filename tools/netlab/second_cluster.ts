/**
 * A second cluster beside the network lab, with a pod network of its own that has no route to
 * the lab's: a private control plane "netlab-b" (Service range 198.18.97.0/24), one test host
 * (a network namespace whose address sits on a link joined to nothing) with a
 * process-provider vkubelet node on its CNI bridge (podCIDR 198.18.101.0/24 of a cluster CIDR
 * 198.18.100.0/22), kube-proxy (nftables) and CoreDNS behind its own cluster DNS Service
 * (198.18.97.10). For the kubernetes provider across a non-flat boundary (issue #64 item 4):
 * the lab is cluster A, this is cluster B. {@link SecondCluster.relay} gives B's pods one way
 * to a port in the root namespace (vkubelet's kubelet API) that is not a pod-network route.
 * Root only; run under the lab's lock, as the lab.
 *
 * ```ts
 * await using b = await startSecondCluster();
 * const url = await b.relay(10250, "127.0.0.1:10250"); // https://198.18.31.1:10250 from B's pods
 * ```
 * @module
 */
import { type TestCluster, useCluster } from "../cluster/harness.ts";
import { type Background, startBackground } from "./background.ts";
import { ensureCoreDns, ensureKubeProxy } from "./build.ts";
import { run, tryRun, waitUntil } from "./command.ts";
import { startCoreDns, startKubeProxy } from "./components.ts";
import { makeHost, type NetlabAddresses, type TestHost } from "./hosts.ts";
import { type NetlabNode, startNetlabNode } from "./node.ts";
import { killPodProcesses } from "./sweep.ts";
import { createDnsService, tails } from "./lab.ts";

const repoRoot = new URL("../../", import.meta.url).pathname;

/** The second cluster's control plane. */
export const SECOND_CLUSTER = "netlab-b";

/** Its addresses: in 198.18.0.0/15 and apart from every one of the lab's. */
export const SECOND_ADDRESSES: NetlabAddresses = {
  underlay: ["198.18.31.1"],
  podCidrs: ["198.18.101.0/24"],
  clusterCidr: "198.18.100.0/22",
  serviceRange: "198.18.97.0/24",
  dnsIp: "198.18.97.10",
  apiserverPort: 6443,
  mtu: 1500,
};

/** A running second cluster. */
export interface SecondCluster extends AsyncDisposable {
  cluster: TestCluster;
  /** Its one node (process provider, CNI). */
  node: NetlabNode;
  host: TestHost;
  dir: string;
  /**
   * Relays `port` on the host's address to `target` (`host:port` in the root namespace) through a
   * Unix socket: the host reaches it with no route out. Resolves to `host address:port`.
   */
  relay(port: number, target: string): Promise<string>;
  /** The end of every component's log, for a failing test's message. */
  logs(): Promise<string>;
}

/** Starts the second cluster (building its components first if needed); see the module doc. */
export async function startSecondCluster(
  options: { progress?: (line: string) => void } = {},
): Promise<SecondCluster> {
  const progress = options.progress ?? (() => {});
  const kubeProxy = await ensureKubeProxy({ progress });
  const coreDns = await ensureCoreDns({ progress });
  const cniBin = await run(["bash", `${repoRoot}tools/network/build_cni.sh`]);
  const cluster = await useCluster(SECOND_CLUSTER, {
    serviceRange: SECOND_ADDRESSES.serviceRange,
  });
  const dir = await Deno.makeTempDir({ prefix: "vk-netlab-b-" });
  const prefix = `vknb${Deno.pid % 100000}`;
  const started: Background[] = [];
  let made: { host: TestHost; remove(): Promise<void> } | undefined;
  let node: NetlabNode | undefined;
  const stop = async () => {
    if (node) {
      await cluster.kubectl([
        "delete",
        "pods",
        "-A",
        "--field-selector",
        `spec.nodeName=${node.name}`,
        "--wait=true",
        "--timeout=60s",
      ]);
    }
    for (const process of started.reverse()) await process.stop();
    if (node) {
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
    await made?.remove();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    made = await makeHost({ dir, prefix, server: cluster.server, addresses: SECOND_ADDRESSES });
    const { host } = made;
    node = await startNetlabNode(cluster, host, { nodeName: `${prefix}-n1`, cniBinDir: cniBin });
    started.push(node.process);
    // The node lifecycle controller lifts its not-ready taint a monitor period after Ready; the
    // kubernetes provider's fit check, like B's scheduler, refuses a pod until then.
    const name = node.name;
    await waitUntil(`node ${name} of ${SECOND_CLUSTER} without the not-ready taint`, async () => {
      const res = await cluster.kubectl(["get", "node", name, "-o", "jsonpath={.spec.taints}"]);
      return res.code === 0 && !res.stdout.includes("node.kubernetes.io/not-ready");
    }, { timeoutMs: 60_000, everyMs: 250 });
    progress(`node ${name} of ${SECOND_CLUSTER} is Ready and schedulable`);
    const admin = await host.localKubeconfig(cluster.kubeconfigPath, "admin");
    await createDnsService(cluster, prefix, node);
    started.push(await startKubeProxy(host, node.name, admin, kubeProxy, "nftables"));
    started.push(await startCoreDns(host, admin, coreDns));
    await waitUntil(`kube-proxy rules for ${SECOND_ADDRESSES.dnsIp}`, async () => {
      const nft = await tryRun(["ip", "netns", "exec", host.netns, "nft", "list", "ruleset"]);
      return nft.stdout.includes(`${SECOND_ADDRESSES.dnsIp} . udp . 53`);
    }, { timeoutMs: 60_000 });
    progress(`${SECOND_CLUSTER}: kube-proxy and CoreDNS are up`);
  } catch (err) {
    const logs = await tails(started);
    await stop();
    throw new Error(`the second cluster did not start: ${err}\n${logs}`, { cause: err });
  }
  const host = made.host;
  let relays = 0;
  return {
    cluster,
    node,
    host,
    dir,
    async relay(port, target) {
      const socket = `${dir}/relay-${++relays}.sock`;
      const [targetHost, targetPort] = [target.replace(/:\d+$/, ""), target.split(":").at(-1)];
      started.push(
        await startBackground(`relay-out-${relays}`, [
          "socat",
          `UNIX-LISTEN:${socket},fork,mode=600`,
          `TCP:${targetHost}:${targetPort}`,
        ], { log: `${dir}/relay-out-${relays}.log` }),
      );
      await waitUntil(`the relay's socket ${socket}`, async () => {
        return (await Deno.stat(socket).catch(() => undefined))?.isSocket;
      }, { timeoutMs: 10_000, everyMs: 50 });
      started.push(
        await startBackground(`relay-in-${relays}`, [
          "socat",
          `TCP-LISTEN:${port},bind=${host.underlayIp},fork,reuseaddr`,
          `UNIX-CONNECT:${socket}`,
        ], { netns: host.netns, log: `${dir}/relay-in-${relays}.log` }),
      );
      const address = `${host.underlayIp}:${port}`;
      await waitUntil(`the relay on ${address}`, async () => {
        const ss = await tryRun(["ip", "netns", "exec", host.netns, "ss", "-Hltn"]);
        return ss.stdout.includes(address);
      }, { timeoutMs: 10_000, everyMs: 50 });
      return address;
    },
    logs: () => tails(started),
    [Symbol.asyncDispose]: stop,
  };
}
