/**
 * The node components of the lab's pod network, each started inside a test host as it would
 * run beside the kubelet of a real node: flanneld (kube subnet manager, vxlan backend), kube-proxy
 * (`--hostname-override` = the vkubelet node, started after the Node has its InternalIP) and
 * CoreDNS (`kubernetes` plugin) behind the cluster DNS Service.
 * @module
 */
import { type Background, startBackground } from "./background.ts";
import { tryRun, waitUntil } from "./command.ts";
import { NETLAB_ADDRESSES, type TestHost } from "./hosts.ts";

/** The VXLAN id flannel uses; its device is `flannel.<VNI>`. */
export const FLANNEL_VNI = 42;

/**
 * Starts flanneld in `host` for `nodeName`; {@link waitForFlannelRoute} says when it routes the
 * other hosts' pod CIDRs. It reads the Node's `spec.podCIDR`, annotates the Node with its VTEP and public
 * IP, and learns the other hosts from theirs: it needs the Node objects, not a kubelet.
 */
export async function startFlannel(
  host: TestHost,
  nodeName: string,
  kubeconfig: string,
  binary: string,
): Promise<Background> {
  const netConf = `${host.dir}/flannel-net-conf.json`;
  await Deno.writeTextFile(
    netConf,
    JSON.stringify({
      Network: NETLAB_ADDRESSES.clusterCidr,
      Backend: { Type: "vxlan", VNI: FLANNEL_VNI },
    }),
  );
  const flannel = await startBackground("flanneld", [
    binary,
    "--kube-subnet-mgr",
    `--kubeconfig-file=${kubeconfig}`,
    `--net-config-path=${netConf}`,
    // /run/flannel/subnet.env would be shared by every namespace.
    `--subnet-file=${host.dir}/flannel-subnet.env`,
    "--iface=netlab-ul",
    `--public-ip=${host.underlayIp}`,
    "--iptables-forward-rules=false",
  ], { netns: host.netns, env: { NODE_NAME: nodeName }, log: `${host.dir}/flanneld.log` });
  return flannel;
}

/** Resolves once `flannel` in `host` routes `peerPodCidr` through its VXLAN device. */
export async function waitForFlannelRoute(
  host: TestHost,
  flannel: Background,
  peerPodCidr: string,
): Promise<void> {
  await waitUntil(`flannel's route to ${peerPodCidr} in ${host.netns}`, async () => {
    if (flannel.exited()) throw new Error(`flanneld exited:\n${await flannel.tail()}`);
    const routes = await tryRun([
      "ip",
      "netns",
      "exec",
      host.netns,
      "ip",
      "route",
      "show",
      peerPodCidr,
      "dev",
      `flannel.${FLANNEL_VNI}`,
    ]);
    return routes.stdout.includes("via");
  }, { detail: () => flannel.tail() });
}

/** kube-proxy's modes the lab runs (one per host). */
export type ProxyMode = "nftables" | "iptables";

/**
 * Starts kube-proxy in `host` and resolves once it is live. `nodeName` must already have its
 * InternalIP: kube-proxy exits when its Node's IPs change, "none" to "some" included.
 */
export async function startKubeProxy(
  host: TestHost,
  nodeName: string,
  kubeconfig: string,
  binary: string,
  mode: ProxyMode,
): Promise<Background> {
  const ip = host.underlayIp;
  const proxy = await startBackground(`kube-proxy`, [
    binary,
    `--kubeconfig=${kubeconfig}`,
    `--proxy-mode=${mode}`,
    `--hostname-override=${nodeName}`,
    `--bind-address=${ip}`,
    `--cluster-cidr=${host.addresses.clusterCidr}`,
    `--nodeport-addresses=${ip}/32`,
    // 0 leaves the conntrack sysctls alone: outside the initial namespace they are read-only.
    "--conntrack-max-per-core=0",
    "--conntrack-tcp-timeout-established=0",
    "--conntrack-tcp-timeout-close-wait=0",
    "--healthz-bind-address=127.0.0.1:10256",
    "--metrics-bind-address=127.0.0.1:10249",
  ], { netns: host.netns, log: `${host.dir}/kube-proxy.log` });
  // /healthz also waits for the first sync; /livez says the process serves.
  await waitUntil(`kube-proxy in ${host.netns}`, async () => {
    if (proxy.exited()) throw new Error(`kube-proxy exited:\n${await proxy.tail()}`);
    const res = await tryRun([
      "ip",
      "netns",
      "exec",
      host.netns,
      "curl",
      "-sf",
      "http://127.0.0.1:10256/healthz",
    ]);
    return res.code === 0;
  }, { timeoutMs: 90_000, detail: () => proxy.tail() });
  return proxy;
}

/**
 * Starts CoreDNS in `host`, serving `cluster.local` from the apiserver (`kubernetes` plugin) and
 * answering NXDOMAIN for everything else (the lab has no upstream); resolves once it is ready.
 */
export async function startCoreDns(
  host: TestHost,
  kubeconfig: string,
  binary: string,
): Promise<Background> {
  const corefile = `${host.dir}/Corefile`;
  await Deno.writeTextFile(
    corefile,
    [
      "cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {",
      "    errors",
      "    ready 127.0.0.1:8181",
      "    kubernetes cluster.local in-addr.arpa ip6.arpa {",
      `        kubeconfig ${kubeconfig}`,
      "        pods insecure",
      "        fallthrough in-addr.arpa ip6.arpa",
      "    }",
      "    cache 5",
      "}",
      ".:53 {",
      "    errors",
      "    template ANY ANY {",
      "        rcode NXDOMAIN",
      "    }",
      "}",
      "",
    ].join("\n"),
  );
  const dns = await startBackground("coredns", [binary, "-conf", corefile], {
    netns: host.netns,
    log: `${host.dir}/coredns.log`,
  });
  await waitUntil(`CoreDNS in ${host.netns}`, async () => {
    if (dns.exited()) throw new Error(`CoreDNS exited:\n${await dns.tail()}`);
    const res = await tryRun([
      "ip",
      "netns",
      "exec",
      host.netns,
      "curl",
      "-sf",
      "http://127.0.0.1:8181/ready",
    ]);
    return res.code === 0;
  }, { detail: () => dns.tail() });
  return dns;
}
