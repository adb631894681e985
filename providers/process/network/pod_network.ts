/**
 * Pod networking for the process provider, as the kubelet and its container runtime give each
 * pod a sandbox network: a network namespace per pod (./netns.ts) wired by the admin's CNI
 * network configuration (./cni.ts) with the kubelet's arguments (`K8S_POD_NAMESPACE`,
 * `K8S_POD_NAME`, `K8S_POD_INFRA_CONTAINER_ID`, `K8S_POD_UID` in `CNI_ARGS`, containerd
 * internal/cri/server/sandbox_run.go `cniNamespaceOpts`), `lo` brought up by the loopback
 * plugin where it is installed (as containerd's CRI attaches its loopback network), hostPorts as
 * the `portMappings` capability and the node's podCIDR(s) as `ipRanges` (the CNI conventions,
 * containernetworking/cni CONVENTIONS.md "Dynamic Plugin specific fields"); the result's IPs
 * become `status.podIPs`. The pod's `/etc/resolv.conf` and `/etc/hosts` are written beside
 * (./dns.ts). `hostNetwork: true` pods keep the host's network, as on any node.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { join } from "node:path";
import type { Logger } from "../../../provider/mod.ts";
import { type Attachment, CniRunner, type NetworkConfigList } from "./cni.ts";
import {
  managedHostsContent,
  nodeHostsContent,
  podDnsConfig,
  podHostnameAndDomain,
  resolvConfContent,
} from "./dns.ts";
import { createNetns, isNetns, listNetns, netnsPath, rebindNetns, removeNetns } from "./netns.ts";

/** The provider config's `network` section (../config.ts). */
export interface NetworkConfig {
  cniConfDir: string;
  cniBinDir: string[];
  clusterDNS: string[];
  clusterDomain: string;
  resolvConf: string;
  podCIDR?: string;
  hostNetns?: string;
  cniCacheDir?: string;
}

/** What a pod's network is, recorded so that a restarted vkubelet finds it again. */
export interface PodNetworkRecord {
  /** The netns file; absent for a host-network pod. */
  netns?: string;
  /** The sandbox ID given to CNI as `CNI_CONTAINERID` and `K8S_POD_INFRA_CONTAINER_ID`. */
  containerId?: string;
  ips: string[];
  /** The pod's resolv.conf and hosts files (bound read-only in every container). */
  resolvConf: string;
  hosts: string;
}

const IFNAME = "eth0";

/** Sets up and tears down pods' networks; one per provider. */
export class PodNetworks {
  readonly #main: CniRunner;
  readonly #loopback?: CniRunner;
  #podCIDRs: string[];

  constructor(
    readonly config: NetworkConfig,
    readonly list: NetworkConfigList,
    private readonly deps: { stateDir: string; log: Logger; nodeIPs: () => string[] },
  ) {
    const options = {
      binDirs: config.cniBinDir,
      cacheDir: config.cniCacheDir ?? join(deps.stateDir, "cni", "results"),
      hostNetns: config.hostNetns,
    };
    this.#main = new CniRunner(list, options);
    if (config.cniBinDir.some((dir) => exists(join(dir, "loopback")))) {
      // containerd's CRI attaches the loopback network to `lo` of every sandbox (go-cni).
      const lo = { cniVersion: "1.0.0", name: "cni-loopback", plugins: [{ type: "loopback" }] };
      this.#loopback = new CniRunner(lo, options);
    }
    this.#podCIDRs = config.podCIDR ? [config.podCIDR] : [];
  }

  /** The node's podCIDRs as the Node says (`spec.podCIDRs`), else the config's. */
  setPodCIDRs(cidrs: string[]): void {
    const next = cidrs.length ? cidrs : (this.config.podCIDR ? [this.config.podCIDR] : []);
    if (next.join(",") === this.#podCIDRs.join(",")) return;
    this.deps.log.info("pod network ranges are now {cidrs}", { cidrs: next.join(",") });
    this.#podCIDRs = next;
  }

  /** The current podCIDRs. */
  podCIDRs(): string[] {
    return [...this.#podCIDRs];
  }

  /**
   * The pod's network: for a host-network pod the node's IPs; else a new namespace, CNI ADD,
   * the result's IPs. Writes its resolv.conf and hosts into `podDir` unless `files` is false
   * (a remote pod: nothing runs in the namespace that reads them). Undone on failure.
   */
  async setUp(pod: Pod, podDir: string, { files: write = true } = {}): Promise<PodNetworkRecord> {
    const files = { resolvConf: join(podDir, "resolv.conf"), hosts: join(podDir, "hosts") };
    if (pod.spec?.hostNetwork) {
      const ips = this.deps.nodeIPs();
      if (write) await this.#writeFiles(pod, ips, files);
      return { ips, ...files };
    }
    const uid = pod.metadata?.uid ?? "";
    const netns = netnsPath(this.deps.stateDir, uid);
    const containerId = sandboxId(uid);
    const record: PodNetworkRecord = { netns, containerId, ips: [], ...files };
    await createNetns(netns);
    try {
      if (this.#loopback) await this.#loopback.add(this.#attachment(pod, record, "lo"));
      const result = await this.#main.add(this.#attachment(pod, record, IFNAME));
      record.ips = (result.ips ?? []).map((ip) => ip.address.split("/")[0]);
      if (record.ips.length === 0) {
        throw new Error(`CNI network ${this.list.name} gave the pod no IP address`);
      }
      if (write) await this.#writeFiles(pod, record.ips, files);
      return record;
    } catch (err) {
      await this.tearDown(pod, record).catch(() => {});
      throw err;
    }
  }

  /** CNI DEL (loopback last) and the namespace's removal; safe to repeat. */
  async tearDown(pod: Pod, record: PodNetworkRecord): Promise<void> {
    if (!record.netns) return;
    const errors: string[] = [];
    for (const [runner, ifName] of [[this.#main, IFNAME], [this.#loopback, "lo"]] as const) {
      if (!runner) continue;
      try {
        await runner.del(this.#attachment(pod, record, ifName));
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    await removeNetns(record.netns);
    if (errors.length) throw new Error(errors.join("; "));
  }

  /**
   * After a restart: binds the namespace again from a live process if its bind is gone, then
   * CNI CHECK; says what is wrong (the kubelet would make a new sandbox) without undoing it.
   */
  async adopt(pod: Pod, record: PodNetworkRecord, livePids: number[]): Promise<void> {
    if (!record.netns) return;
    if (!isNetns(record.netns)) {
      const pid = livePids[0];
      if (pid === undefined) {
        await createNetns(record.netns);
        this.deps.log.warn("pod {pod}: network namespace was gone; made a new one", {
          pod: podName(pod),
        });
      } else await rebindNetns(record.netns, pid);
    }
    try {
      const ok = await this.#main.check(this.#attachment(pod, record, IFNAME));
      if (!ok) {
        // Nothing cached: ADD again, as a runtime recreating the pod's network would.
        await this.#main.add(this.#attachment(pod, record, IFNAME));
      }
    } catch (err) {
      this.deps.log.warn("pod {pod}: CNI CHECK failed: {err}", { pod: podName(pod), err });
    }
  }

  /**
   * After a restart, for a pod whose namespace is gone with nothing of it left running here to
   * bind it from (a host reboot; removed by hand): a new namespace, CNI DEL of the old attachment
   * (no DEL ran when the namespace went, so its IPAM lease would refuse the IP to the pod), then
   * ADD asking for the record's IPs again, as the `ips` capability (to plugins that advertise
   * it) and `CNI_ARGS` `IP=` (one IP); host-local honours both (containernetworking/plugins
   * plugins/ipam/host-local/backend/allocator/config.go `LoadIPAMConfig`, allocator.go `Get`).
   * Throws {@link PodIPUnavailableError}, with nothing left set up, when CNI gives other IPs.
   */
  async recreate(pod: Pod, record: PodNetworkRecord): Promise<void> {
    if (!record.netns) return;
    const wanted = record.ips;
    const cached = await this.#main.cached(record.containerId ?? "", IFNAME);
    // The addresses with their prefix where the old result has them, as the convention shows.
    const requested = wanted.map((ip) =>
      cached?.result.ips?.find((c) => c.address.split("/")[0] === ip)?.address ?? ip
    );
    await createNetns(record.netns);
    let got: string[] = [];
    try {
      await this.#main.del(this.#attachment(pod, record, IFNAME));
      if (this.#loopback) await this.#loopback.add(this.#attachment(pod, record, "lo"));
      const result = await this.#main.add(this.#attachment(pod, record, IFNAME, requested));
      got = (result.ips ?? []).map((ip) => ip.address.split("/")[0]);
    } catch (err) {
      await this.tearDown(pod, record).catch(() => {});
      throw new PodIPUnavailableError(podName(pod), wanted, (err as Error).message, {
        cause: err,
      });
    }
    if ([...got].sort().join() !== [...wanted].sort().join()) {
      await this.tearDown(pod, record).catch(() => {});
      const said = `CNI network ${this.list.name} gave ${got.join(", ") || "no IP"} instead ` +
        `(its IPAM plugin does not honour the ips capability or CNI_ARGS IP=)`;
      throw new PodIPUnavailableError(podName(pod), wanted, said);
    }
    await this.#writeFiles(pod, got, record);
    this.deps.log.warn("pod {pod}: network namespace was gone; made a new one with IP {ip}", {
      pod: podName(pod),
      ip: got.join(","),
    });
  }

  /**
   * Garbage collection at start: DEL of cached attachments whose pod is not among `pods`, the
   * CNI `GC` verb where the list's version has it, and the removal of netns files of pods gone.
   */
  async collectGarbage(pods: { pod: Pod; network?: PodNetworkRecord }[]): Promise<void> {
    const valid = pods.flatMap(({ network }) =>
      network?.containerId ? [{ containerId: network.containerId, ifName: IFNAME }] : []
    );
    const validLo = valid.map((v) => ({ ...v, ifName: "lo" }));
    const errors = [
      ...await this.#main.gc(valid),
      ...(this.#loopback ? await this.#loopback.gc(validLo) : []),
    ];
    for (const err of errors) this.deps.log.warn("CNI garbage collection: {err}", { err });
    const keep = new Set(pods.map(({ pod }) => pod.metadata?.uid));
    for (const uid of await listNetns(this.deps.stateDir)) {
      if (keep.has(uid)) continue;
      this.deps.log.info("removing the network namespace of gone pod {uid}", { uid });
      await removeNetns(netnsPath(this.deps.stateDir, uid)).catch((err) =>
        this.deps.log.warn("could not remove network namespace {uid}: {err}", { uid, err })
      );
    }
  }

  /** With `requestedIPs`, CNI is asked for those addresses (see {@link recreate}). */
  #attachment(
    pod: Pod,
    record: PodNetworkRecord,
    ifName: string,
    requestedIPs: string[] = [],
  ): Attachment {
    const capabilityArgs: Record<string, unknown> = {};
    if (requestedIPs.length) capabilityArgs.ips = requestedIPs;
    // host-local reads one address from CNI_ARGS IP= (IPAMEnvArgs); two would fail to parse.
    const ipArg: [string, string][] = requestedIPs.length === 1
      ? [["IP", requestedIPs[0].split("/")[0]]]
      : [];
    const mappings = portMappings(pod);
    if (mappings.length) capabilityArgs.portMappings = mappings;
    if (this.#podCIDRs.length) {
      capabilityArgs.ipRanges = this.#podCIDRs.map((subnet) => [{ subnet }]);
    }
    return {
      containerId: record.containerId ?? "",
      ifName,
      netns: record.netns ?? "",
      args: [
        ["IgnoreUnknown", "1"],
        ["K8S_POD_NAMESPACE", pod.metadata?.namespace ?? ""],
        ["K8S_POD_NAME", pod.metadata?.name ?? ""],
        ["K8S_POD_INFRA_CONTAINER_ID", record.containerId ?? ""],
        ["K8S_POD_UID", pod.metadata?.uid ?? ""],
        ...ipArg,
      ],
      capabilityArgs,
    };
  }

  async #writeFiles(pod: Pod, ips: string[], files: { resolvConf: string; hosts: string }) {
    let hostResolv: string | undefined;
    if (this.config.resolvConf) {
      hostResolv = await Deno.readTextFile(this.config.resolvConf).catch(() => "");
    }
    const dns = podDnsConfig(pod, {
      clusterDNS: this.config.clusterDNS,
      clusterDomain: this.config.clusterDomain,
      hostResolvConf: hostResolv,
      nodeIPs: this.deps.nodeIPs(),
    }, (message) => this.deps.log.warn("pod {pod}: {message}", { pod: podName(pod), message }));
    const { hostname, domain } = podHostnameAndDomain(pod, this.config.clusterDomain);
    const hosts = pod.spec?.hostNetwork
      ? nodeHostsContent(await Deno.readTextFile("/etc/hosts"), pod.spec?.hostAliases)
      : managedHostsContent(ips, hostname, domain, pod.spec?.hostAliases);
    await Deno.writeTextFile(files.resolvConf, resolvConfContent(dns), { mode: 0o644 });
    await Deno.writeTextFile(files.hosts, hosts, { mode: 0o644 });
    await Deno.chmod(files.resolvConf, 0o644);
    await Deno.chmod(files.hosts, 0o644);
  }
}

/** A pod's IPs could not be had again for it (taken meanwhile, or not honoured by the IPAM). */
export class PodIPUnavailableError extends Error {
  override name = "PodIPUnavailableError";
  constructor(
    readonly pod: string,
    readonly ips: string[],
    detail: string,
    options?: ErrorOptions,
  ) {
    super(
      `Pod ${pod} could not have its IP ${ips.join(", ")} again in a new network namespace: ` +
        `${detail}; the pod's network was removed, attach it anew to give it a new IP`,
      options,
    );
  }
}

/**
 * The `portMappings` capability from the containers' hostPorts (containerd
 * internal/cri/server/sandbox_run.go `toCNIPortMappings`: hostPort > 0, protocol lower case).
 */
export function portMappings(pod: Pod): Record<string, unknown>[] {
  const mappings: Record<string, unknown>[] = [];
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort || p.hostPort <= 0) continue;
      mappings.push({
        hostPort: p.hostPort,
        containerPort: p.containerPort,
        protocol: (p.protocol ?? "TCP").toLowerCase(),
        hostIP: p.hostIP ?? "",
      });
    }
  }
  return mappings;
}

/** The sandbox ID of pod `uid`: 64 hex characters, as a runtime's sandbox IDs are. */
export function sandboxId(uid: string): string {
  const hex = uid.replaceAll("-", "").toLowerCase().replace(/[^0-9a-f]/g, "0");
  return (hex + "0".repeat(64)).slice(0, 64);
}

function podName(pod: Pod): string {
  return `${pod.metadata?.namespace}/${pod.metadata?.name}`;
}

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}
