/**
 * Where a container group sits on the network and how it resolves names: its VNet subnets (the
 * config's, or the pod's `vkubelet.io/aci-subnet-ids` annotation), its IP address (public with a
 * DNS name label from `virtualkubelet.io/dnsnamelabel`, as azure-aci spells it, or private in a
 * VNet), the cluster's DNS for `ClusterFirst` pods as the kubelet writes it, and the kube-proxy
 * extension azure-aci adds so that a group in the VNet reaches Services by their cluster IPs.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../provider/mod.ts";
import type { AciConfig } from "./config.ts";

/** The pod annotation naming the group's subnets (comma-separated subnet resource IDs). */
export const SUBNET_ANNOTATION = "vkubelet.io/aci-subnet-ids";
/** azure-aci's annotation for the public IP's DNS name label (pkg/provider/aci.go). */
export const DNS_NAME_LABEL_ANNOTATION = "virtualkubelet.io/dnsnamelabel";

/** A subnet's resource ID, as ARM writes it. */
export const SUBNET_ID =
  /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Network\/virtualNetworks\/[^/]+\/subnets\/[^/]+$/i;

/** The kubelet's limits (pkg/apis/core/validation: MaxDNSNameservers, MaxDNSSearchPaths). */
const MAX_NAMESERVERS = 3;
const MAX_SEARCHES = 32;

/** The group's subnets: the pod's annotation, else the config's `subnetIds`. */
export function subnetIdsFor(pod: Pod, config: AciConfig): string[] {
  const raw = pod.metadata?.annotations?.[SUBNET_ANNOTATION];
  if (raw === undefined) return config.subnetIds;
  const ids = raw.split(",").map((s) => s.trim()).filter(Boolean);
  const bad = ids.find((id) => !SUBNET_ID.test(id));
  if (!ids.length || bad !== undefined) {
    throw new InvalidInputError(
      `metadata.annotations[${SUBNET_ANNOTATION}]: ${
        JSON.stringify(bad ?? raw)
      } is not a subnet resource ID; give /subscriptions/.../virtualNetworks/NAME/subnets/NAME (comma-separated for several)`,
    );
  }
  return ids;
}

/** ACI's `IpAddress` for the exposed ports: private in a VNet, else public (with its label). */
export function ipAddressFor(pod: Pod, ports: { port: number }[], vnet: boolean) {
  const label = pod.metadata?.annotations?.[DNS_NAME_LABEL_ANNOTATION];
  if (label !== undefined && vnet) {
    throw new InvalidInputError(
      `metadata.annotations[${DNS_NAME_LABEL_ANNOTATION}]: a DNS name label needs a public IP, and this group is in a VNet (private IP); remove the annotation or the subnet`,
    );
  }
  if (label !== undefined && !ports.length) {
    throw new InvalidInputError(
      `metadata.annotations[${DNS_NAME_LABEL_ANNOTATION}]: a DNS name label names the group's public IP, which a group gets only with ports (as azure-aci sets it); add a containerPort or remove the annotation`,
    );
  }
  if (label !== undefined && !/^[a-z][a-z0-9-]{1,61}[a-z0-9]$/.test(label)) {
    throw new InvalidInputError(
      `metadata.annotations[${DNS_NAME_LABEL_ANNOTATION}]: ${
        JSON.stringify(label)
      } is not a DNS name label (3 to 63 lowercase letters, digits and dashes, starting with a letter)`,
    );
  }
  if (!ports.length && !vnet && label === undefined) return undefined;
  return {
    type: vnet ? "Private" : "Public",
    ports,
    ...(label !== undefined ? { dnsNameLabel: label } : {}),
  };
}

function base64(text: string): string {
  return btoa(Array.from(new TextEncoder().encode(text), (b) => String.fromCharCode(b)).join(""));
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}

/**
 * Options as the kubelet merges them: the pod's replace the cluster's of the same name
 * (kubernetes/kubernetes pkg/kubelet/network/dns/dns.go, mergeDNSOptions).
 */
function mergeOptions(base: string[], pod: { name?: string; value?: string }[]): string[] {
  const byName = new Map<string, string>();
  for (const o of base) byName.set(o.split(":")[0], o);
  for (const o of pod) {
    if (o.name) byName.set(o.name, o.value ? `${o.name}:${o.value}` : o.name);
  }
  return [...byName.values()];
}

/**
 * ACI's `dnsConfig` for the pod. `ClusterFirst` (the default) in a VNet with the config's
 * `clusterDNS`: the cluster's nameservers, searches `<ns>.svc.<domain> svc.<domain> <domain>`
 * and `ndots:5`, then the pod's `dnsConfig` appended (pkg/kubelet/network/dns/dns.go,
 * GetPodDNS). Without `clusterDNS` or outside a VNet (where no cluster IP is reachable) the
 * kubelet's fallback applies: `Default`, ACI's own resolver, plus the pod's `dnsConfig` if it
 * names nameservers. `None` takes the pod's `dnsConfig` only.
 */
export function dnsConfigFor(pod: Pod, config: AciConfig, vnet: boolean) {
  const spec = pod.spec;
  const own = spec?.dnsConfig;
  const policy = spec?.dnsPolicy ?? "ClusterFirst";
  const clusterFirst = (policy === "ClusterFirst" && !spec?.hostNetwork) ||
    policy === "ClusterFirstWithHostNet";
  let servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  if (clusterFirst && vnet && config.clusterDNS.length) {
    const domain = config.clusterDomain;
    const namespace = pod.metadata?.namespace ?? "default";
    servers = [...config.clusterDNS];
    searches = [`${namespace}.svc.${domain}`, `svc.${domain}`, domain];
    options = ["ndots:5"];
  }
  if (own) {
    servers = unique([...servers, ...(own.nameservers ?? [])]);
    searches = unique([...searches, ...(own.searches ?? [])]);
    options = mergeOptions(options, own.options ?? []);
  }
  if (!servers.length) {
    if (policy === "None") {
      throw new InvalidInputError(
        "spec.dnsConfig.nameservers: dnsPolicy None needs at least one nameserver",
      );
    }
    return undefined;
  }
  return {
    nameServers: servers.slice(0, MAX_NAMESERVERS),
    ...(searches.length ? { searchDomains: searches.slice(0, MAX_SEARCHES).join(" ") } : {}),
    ...(options.length ? { options: options.join(" ") } : {}),
  };
}

/** ACI's `DeploymentExtensionSpec`, flattened as the SDK takes it (it nests `properties`). */
export interface AciExtension {
  name: string;
  extensionType: string;
  version: string;
  settings?: Record<string, string>;
  protectedSettings?: Record<string, string>;
}

/**
 * The kube-proxy extension as azure-aci adds it to Linux groups (pkg/client/extensions.go):
 * ACI runs kube-proxy beside the containers with the cluster CIDR and a kubeconfig, so that
 * Service cluster IPs route from inside the group. The kubeconfig (`kubeProxy.kubeconfig` of
 * the config, read at start) goes as a protected setting, which ACI never returns.
 */
export function extensionsFor(config: AciConfig, kubeconfig: string | undefined): AciExtension[] {
  if (!config.kubeProxy || config.osType !== "Linux" || kubeconfig === undefined) return [];
  return [{
    name: "kube-proxy",
    extensionType: "kube-proxy",
    version: "1.0",
    settings: {
      clusterCidr: config.kubeProxy.clusterCidr,
      kubeVersion: config.kubeProxy.kubeVersion,
    },
    protectedSettings: { kubeConfig: base64(kubeconfig) },
  }];
}
