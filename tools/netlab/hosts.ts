/**
 * Two test hosts as network namespaces, joined by an underlay veth, each with what a node of a
 * pod network has before its components start: forwarding on, a CNI conflist (bridge with
 * host-local ranges from the node's podCIDR, portmap), a masquerade for traffic leaving the
 * cluster CIDR, a route covering the Service range, and the apiserver at `127.0.0.1:6443`
 * through a relay (a socat on a Unix socket in the root namespace, one in each host). The root
 * namespace gets no interface, route, sysctl or rule. Every address is in 198.18.0.0/15: the lab's
 * {@link NETLAB_ADDRESSES} by default, another set for a second lab ({@link makeHost}: one host).
 * @module
 */
import { type Background, startBackground } from "./background.ts";
import { run, tryRun, waitUntil } from "./command.ts";

/** A lab's addresses: its hosts' (one entry per host), its pods', its Services'. */
export interface NetlabAddresses {
  /** Each host's own address (on the underlay link). */
  underlay: readonly string[];
  /** Each host's podCIDR. */
  podCidrs: readonly string[];
  /** The cluster CIDR covering every podCIDR (flannel's network, kube-proxy's `--cluster-cidr`). */
  clusterCidr: string;
  serviceRange: string;
  /** The cluster DNS Service's ClusterIP (`--cluster-dns`). */
  dnsIp: string;
  /** The port the apiserver appears on inside each host. */
  apiserverPort: number;
  mtu: number;
}

/** The lab's addresses (all in 198.18.0.0/15, the benchmarking range). */
export const NETLAB_ADDRESSES = {
  underlay: ["198.18.30.1", "198.18.30.2"],
  podCidrs: ["198.19.1.0/24", "198.19.2.0/24"],
  clusterCidr: "198.19.0.0/16",
  serviceRange: "198.18.96.0/24",
  /** The cluster DNS Service's ClusterIP (`--cluster-dns`). */
  dnsIp: "198.18.96.10",
  /** The port the apiserver appears on inside each host. */
  apiserverPort: 6443,
  /** 1500 minus the 50 bytes of a VXLAN header. */
  mtu: 1450,
} as const;

/** One test host. */
export interface TestHost {
  /** 1 or 2. */
  index: number;
  /** The addresses of the lab it belongs to ({@link NETLAB_ADDRESSES} unless made otherwise). */
  addresses: NetlabAddresses;
  /** The `ip netns` name. */
  netns: string;
  underlayIp: string;
  podCidr: string;
  /** Its own directory (CNI config, leases, kubeconfigs, logs). */
  dir: string;
  /** The CNI conflist directory (`network.cniConfDir`). */
  cniConfDir: string;
  /** The host's own resolv.conf (`network.resolvConf`, what dnsPolicy Default gives). */
  resolvConf: string;
  /** Runs a command in the host's namespace; its stdout, or throws. */
  run(...argv: string[]): Promise<string>;
  /** Rewrites a kubeconfig of the cluster to reach the apiserver through the host's relay. */
  localKubeconfig(kubeconfig: string, name: string): Promise<string>;
}

/** The hosts and what joins them to the apiserver. */
export interface TestHosts {
  hosts: [TestHost, TestHost];
  /** Stops the relays and deletes the namespaces (with every link, route and rule in them). */
  remove(): Promise<void>;
}

/** Options for {@link makeHosts}. */
export interface MakeHostsOptions {
  /** The lab's directory. */
  dir: string;
  /** Prefix of the namespaces' names. */
  prefix: string;
  /** The apiserver's `https://127.0.0.1:PORT`. */
  server: string;
  /** The hosts' addresses; default {@link NETLAB_ADDRESSES}. */
  addresses?: NetlabAddresses;
}

/** Makes both hosts; on a failure, removes what it made and throws. */
export async function makeHosts(options: MakeHostsOptions): Promise<TestHosts> {
  const made = await makeHostList(options, 2);
  try {
    const hosts = made.hosts as [TestHost, TestHost];
    await joinUnderlay(hosts);
    return { hosts, remove: made.remove };
  } catch (err) {
    await made.remove();
    throw err;
  }
}

/**
 * One test host, alone (a one-node cluster): as {@link makeHosts}' hosts, its address on a
 * `netlab-ul` link that joins it to nothing (a veth whose peer stays in the host: the lab's
 * kernels may lack the dummy link type).
 */
export async function makeHost(
  options: MakeHostsOptions,
): Promise<{ host: TestHost; remove(): Promise<void> }> {
  const made = await makeHostList(options, 1);
  try {
    const host = made.hosts[0];
    await host.run(
      "ip",
      "link",
      "add",
      "netlab-ul",
      "type",
      "veth",
      "peer",
      "name",
      "netlab-ul-end",
    );
    await host.run("ip", "addr", "add", `${host.underlayIp}/24`, "dev", "netlab-ul");
    await host.run("ip", "link", "set", "netlab-ul-end", "up");
    await host.run("ip", "link", "set", "netlab-ul", "up");
    await host.run("ip", "route", "add", host.addresses.serviceRange, "dev", "netlab-ul");
    return { host, remove: made.remove };
  } catch (err) {
    await made.remove();
    throw err;
  }
}

/** `count` hosts with their apiserver relays, not yet joined. */
async function makeHostList(
  options: MakeHostsOptions,
  count: number,
): Promise<{ hosts: TestHost[]; remove(): Promise<void> }> {
  const { dir, prefix } = options;
  const addresses = options.addresses ?? NETLAB_ADDRESSES;
  const relays: Background[] = [];
  const made: string[] = [];
  const remove = async () => {
    for (const relay of relays.reverse()) await relay.stop();
    for (const netns of made) await tryRun(["ip", "netns", "delete", netns]);
  };
  try {
    const socket = `${dir}/apiserver.sock`;
    const target = new URL(options.server);
    relays.push(
      await startBackground("relay", [
        "socat",
        `UNIX-LISTEN:${socket},fork,mode=600`,
        `TCP:${target.hostname}:${target.port}`,
      ], { log: `${dir}/relay.log` }),
    );
    await waitUntil("the apiserver relay's socket", async () => {
      try {
        return (await Deno.stat(socket)).isSocket;
      } catch {
        return false;
      }
    }, { timeoutMs: 10_000, everyMs: 50 });
    const hosts: TestHost[] = [];
    for (let index = 1; index <= count; index++) {
      const netns = `${prefix}-h${index}`;
      await run(["ip", "netns", "add", netns]);
      made.push(netns);
      const host = await prepareHost(index, netns, `${dir}/h${index}`, options.server, addresses);
      relays.push(
        await startBackground(`relay-h${index}`, [
          "socat",
          `TCP-LISTEN:${addresses.apiserverPort},bind=127.0.0.1,fork,reuseaddr`,
          `UNIX-CONNECT:${socket}`,
        ], { netns, log: `${host.dir}/relay.log` }),
      );
      hosts.push(host);
    }
    return { hosts, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

async function prepareHost(
  index: number,
  netns: string,
  dir: string,
  server: string,
  addresses: NetlabAddresses,
): Promise<TestHost> {
  const { underlay, podCidrs, clusterCidr, mtu } = addresses;
  await Deno.mkdir(`${dir}/net.d`, { recursive: true });
  const inHost = (...argv: string[]) => run(["ip", "netns", "exec", netns, ...argv]);
  await inHost("ip", "link", "set", "lo", "up");
  await inHost("sysctl", "-qw", "net.ipv4.ip_forward=1");
  // ipMasq stays off: the bridge plugin's masquerade covers everything outside the node's own
  // /24, which would hide pod IPs from the other host's pods; this rule spares the cluster CIDR.
  await run(
    ["ip", "netns", "exec", netns, "nft", "-f", "-"],
    [
      "table ip netlab-masq {",
      "  chain postrouting {",
      "    type nat hook postrouting priority srcnat; policy accept;",
      `    ip saddr ${clusterCidr} ip daddr != ${clusterCidr} masquerade`,
      "  }",
      "}",
      "",
    ].join("\n"),
  );
  const conflist = {
    cniVersion: "1.0.0",
    name: "netlab",
    plugins: [
      {
        type: "bridge",
        bridge: "netlab-br0",
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        mtu,
        ipam: { type: "host-local", dataDir: `${dir}/ipam`, routes: [{ dst: "0.0.0.0/0" }] },
        capabilities: { ipRanges: true },
      },
      { type: "portmap", backend: "nftables", capabilities: { portMappings: true } },
    ],
  };
  await Deno.writeTextFile(`${dir}/net.d/10-netlab.conflist`, JSON.stringify(conflist, null, 2));
  await Deno.writeTextFile(`${dir}/resolv.conf`, `nameserver ${underlay[index - 1]}\n`);
  return {
    index,
    addresses,
    netns,
    underlayIp: underlay[index - 1],
    podCidr: podCidrs[index - 1],
    dir,
    cniConfDir: `${dir}/net.d`,
    resolvConf: `${dir}/resolv.conf`,
    run: inHost,
    async localKubeconfig(kubeconfig, name) {
      const text = await Deno.readTextFile(kubeconfig);
      const local = `https://127.0.0.1:${addresses.apiserverPort}`;
      const path = `${dir}/${name}.kubeconfig`;
      await Deno.writeTextFile(path, text.replaceAll(server, local), { mode: 0o600 });
      return path;
    },
  };
}

/** A veth made inside host 1 with its peer moved to host 2: the root namespace never holds it. */
async function joinUnderlay([h1, h2]: [TestHost, TestHost]): Promise<void> {
  await h1.run(
    "ip",
    "link",
    "add",
    "netlab-ul",
    "type",
    "veth",
    "peer",
    "name",
    "netlab-ul",
    "netns",
    h2.netns,
  );
  for (const host of [h1, h2]) {
    await host.run("ip", "addr", "add", `${host.underlayIp}/24`, "dev", "netlab-ul");
    await host.run("ip", "link", "set", "netlab-ul", "up");
    // The host's own connections to ClusterIPs need a route that covers them (a real host's
    // default route does): the route lookup comes before kube-proxy's output DNAT.
    await host.run("ip", "route", "add", host.addresses.serviceRange, "dev", "netlab-ul");
  }
}
