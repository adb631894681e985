/**
 * A pod's DNS as CreateContainerGroup's `DnsPolicy` and `DnsConfig`. `ClusterFirst` (the
 * default) with the config's `clusterDNS` is written as the kubelet writes it
 * (kubernetes/kubernetes pkg/kubelet/network/dns/dns.go, GetPodDNS): the cluster's
 * nameservers, searches `<ns>.svc.<domain> svc.<domain> <domain>`, `ndots:5`, then the pod's
 * own dnsConfig appended (its options replace those of the same name), sent with `DnsPolicy:
 * None` so that ECI uses exactly that. Without `clusterDNS`, the kubelet's fallback: `Default`
 * (ECI's VPC resolver) plus the pod's dnsConfig. `None` takes the pod's dnsConfig only.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { EciConfig } from "../config.ts";

const MAX_NAMESERVERS = 3;
const MAX_SEARCHES = 32;

/** `dnsPolicy` and `dnsConfig` of the create request (the SDK's names). */
export function dnsFor(pod: Pod, config: EciConfig) {
  const spec = pod.spec;
  const own = spec?.dnsConfig;
  const policy = spec?.dnsPolicy ?? "ClusterFirst";
  const clusterFirst = policy === "ClusterFirst" || policy === "ClusterFirstWithHostNet";
  let servers: string[] = [];
  let searches: string[] = [];
  const options = new Map<string, string | undefined>();
  const cluster = clusterFirst && config.clusterDNS.length > 0;
  if (cluster) {
    const domain = config.clusterDomain;
    servers = [...config.clusterDNS];
    searches = [`${pod.metadata?.namespace ?? "default"}.svc.${domain}`, `svc.${domain}`, domain];
    options.set("ndots", "5");
  }
  if (own) {
    servers = [...new Set([...servers, ...(own.nameservers ?? [])])];
    searches = [...new Set([...searches, ...(own.searches ?? [])])];
    for (const o of own.options ?? []) if (o.name) options.set(o.name, o.value);
  }
  const dnsConfig = servers.length || searches.length || options.size
    ? {
      nameServer: servers.slice(0, MAX_NAMESERVERS),
      search: searches.slice(0, MAX_SEARCHES),
      option: [...options].map(([name, value]) => ({ name, value })),
    }
    : undefined;
  return {
    dnsPolicy: policy === "None" || cluster ? "None" : undefined,
    dnsConfig: dnsConfig as never,
  };
}
