/**
 * vkubelet with the process provider inside a test host, as a node of the lab's pod network:
 * its InternalIP and kubelet API on the host's underlay address, the host's CNI conflist, the
 * cluster DNS and domain as `--cluster-dns`/`--cluster-domain` would give a kubelet, and the
 * node's podCIDR set at registration (the lab's control plane allocates none). The apiserver
 * cannot reach its kubelet API (the root namespace has no route into the hosts), so logs and
 * exec go through {@link podNetns} and `nsenter` instead.
 * @module
 */
import type { TestCluster } from "../cluster/harness.ts";
import { VKUBELET_PERMISSIONS } from "../cluster/vkubelet.ts";
import { type Background, startBackground } from "./background.ts";
import { waitUntil } from "./command.ts";
import type { TestHost } from "./hosts.ts";

const mainPath = new URL("../../main.ts", import.meta.url).pathname;

/** A vkubelet node in a test host. */
export interface NetlabNode {
  name: string;
  host: TestHost;
  /** The process provider's state directory (pod netns files under `netns/<uid>`). */
  stateDir: string;
  process: Background;
}

/** Options for {@link startNetlabNode}. */
export interface NetlabNodeOptions {
  nodeName: string;
  /** The CNI plugins' directory (`network.cniBinDir`). */
  cniBinDir: string;
  /** The provider config's other fields (merged over the lab's). */
  providerConfig?: Record<string, unknown>;
}

/** Starts vkubelet in `host` and resolves once its Node is Ready with its InternalIP. */
export async function startNetlabNode(
  cluster: TestCluster,
  host: TestHost,
  options: NetlabNodeOptions,
): Promise<NetlabNode> {
  const { nodeName } = options;
  const kubeconfig = await host.localKubeconfig(await cluster.nodeKubeconfig(nodeName), nodeName);
  const serving = await cluster.issueServingCert(nodeName, [host.underlayIp, nodeName]);
  const stateDir = `${host.dir}/process`;
  const config = {
    stateDir,
    cgroups: "off",
    network: {
      cniConfDir: host.cniConfDir,
      cniBinDir: options.cniBinDir,
      clusterDNS: [host.addresses.dnsIp],
      clusterDomain: "cluster.local",
      resolvConf: host.resolvConf,
      podCIDR: host.podCidr,
      cniCacheDir: `${host.dir}/cni-cache`,
    },
    ...options.providerConfig,
  };
  const configFile = `${host.dir}/${nodeName}-provider.json`;
  await Deno.writeTextFile(configFile, JSON.stringify(config, null, 2), { mode: 0o600 });
  const process = await startBackground("vkubelet", [
    Deno.execPath(),
    "run",
    ...VKUBELET_PERMISSIONS,
    mainPath,
    `--nodename=${nodeName}`,
    "--provider=process",
    `--provider-config=${configFile}`,
    `--kubeconfig=${kubeconfig}`,
    `--node-ip=${host.underlayIp}`,
    `--listen-address=${host.underlayIp}`,
    "--port=10250",
    `--tls-cert-file=${serving.certFile}`,
    `--tls-private-key-file=${serving.keyFile}`,
    "--disable-taint",
  ], { netns: host.netns, env: { NO_COLOR: "1" }, log: `${host.dir}/vkubelet.log` });
  await waitUntil(`node ${nodeName} Ready with InternalIP ${host.underlayIp}`, async () => {
    if (process.exited()) throw new Error(`vkubelet exited:\n${await process.tail()}`);
    const res = await cluster.kubectl([
      "get",
      "node",
      nodeName,
      "-o",
      'jsonpath={.status.conditions[?(@.type=="Ready")].status} ' +
      '{.status.addresses[?(@.type=="InternalIP")].address}',
    ]);
    return res.stdout.trim() === `True ${host.underlayIp}`;
  }, { timeoutMs: 60_000, detail: () => process.tail() });
  return { name: nodeName, host, stateDir, process };
}

/** The network namespace file of pod `uid` on `node` (the process provider's layout). */
export function podNetns(node: NetlabNode, uid: string): string {
  return `${node.stateDir}/netns/${uid}`;
}
