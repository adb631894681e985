/**
 * A pod's `/etc/resolv.conf` and `/etc/hosts`, byte for byte as a node writes them:
 *
 * - The DNS settings are the kubelet's (kubernetes/kubernetes pkg/kubelet/network/dns/dns.go
 *   `GetPodDNS`, `getPodDNSType`, `generateSearchesForDNSClusterFirst`, `appendDNSConfig`,
 *   `mergeDNSOptions`, `formDNSConfigFitsLimits`, `parseResolvConf`) for each `dnsPolicy`, from
 *   `--cluster-dns`, `--cluster-domain` and `--resolv-conf`; the file is what the container
 *   runtime writes from them (containerd internal/cri/server/sandbox_run_linux.go
 *   `parseDNSOptions`: `search`, then one `nameserver` line each, then `options`). The kubelet
 *   merges options through a Go map, so their order there is random; here it is the order they
 *   come in (the host's or `ndots:5`, then the pod's), one of the kubelet's orders.
 * - The hosts file is the kubelet's (pkg/kubelet/kubelet_pods.go `managedHostsFileContent`,
 *   `nodeHostsFileContent`, `hostsEntriesFromHostAliases`), with the pod's hostname and domain
 *   from `GeneratePodHostNameAndDomain` (pkg/kubelet/kubelet_pods.go).
 * @module
 */
import type { HostAlias, Pod } from "kubernetes-types/core/v1.d.ts";

/** What the kubelet's DNS configurer is given. */
export interface DnsSettings {
  /** `--cluster-dns`. */
  clusterDNS: string[];
  /** `--cluster-domain` ("" for none). */
  clusterDomain: string;
  /** The text of `--resolv-conf` (the host's /etc/resolv.conf), or undefined for "". */
  hostResolvConf: string | undefined;
  /** The node's IPs (for `--resolv-conf=""`: 127.0.0.1 or ::1 each). */
  nodeIPs: string[];
}

/** A runtime DNS config (CRI `DNSConfig`). */
export interface DnsConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

// pkg/apis/core/validation: MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars; and
// a search domain may not exceed a DNS-1123 subdomain (253).
const MAX_NAMESERVERS = 3;
const MAX_SEARCH_PATHS = 32;
const MAX_SEARCH_CHARS = 2048;
const MAX_SUBDOMAIN = 253;

/** `parseResolvConf`: nameservers, searches (trailing dots dropped) and options of a file. */
export function parseResolvConf(text: string): DnsConfig {
  const config: DnsConfig = { servers: [], searches: [], options: [] };
  for (let line of text.split("\n")) {
    const comment = line.search(/[#;]/);
    if (comment >= 0) line = line.slice(0, comment);
    const fields = line.trim().split(/\s+/).filter(Boolean);
    if (fields.length === 0) continue;
    if (fields[0] === "nameserver" && fields.length >= 2) config.servers.push(fields[1]);
    if (fields[0] === "search") {
      // The last search line wins; "." is the root, not a domain.
      config.searches = fields.slice(1).filter((s) => s !== ".").map((s) => s.replace(/\.$/, ""));
    }
    if (fields[0] === "options") config.options = mergeOptions(config.options, fields.slice(1));
  }
  return config;
}

/** The pod's DNS type (`getPodDNSType`). */
function dnsType(pod: Pod): "none" | "cluster" | "host" {
  const policy = pod.spec?.dnsPolicy ?? "ClusterFirst";
  if (policy === "None") return "none";
  if (policy === "ClusterFirstWithHostNet") return "cluster";
  if (policy === "ClusterFirst" && !pod.spec?.hostNetwork) return "cluster";
  return "host";
}

/**
 * The pod's DNS config (`GetPodDNS`); `warn` is told when ClusterFirst falls back to Default
 * because no cluster DNS is configured (the kubelet's `MissingClusterDNS` event).
 */
export function podDnsConfig(
  pod: Pod,
  settings: DnsSettings,
  warn: (message: string) => void = () => {},
): DnsConfig {
  const type = dnsType(pod);
  let config: DnsConfig = type === "none"
    ? { servers: [], searches: [], options: [] }
    : parseResolvConf(settings.hostResolvConf ?? "");
  let host = type === "host";
  if (type === "cluster") {
    if (settings.clusterDNS.length) {
      config = {
        servers: [...settings.clusterDNS],
        searches: clusterSearches(config.searches, pod, settings.clusterDomain),
        options: ["ndots:5"],
      };
    } else {
      warn(
        `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
      );
      host = true;
    }
  }
  if (host && settings.hostResolvConf === undefined) {
    config.servers = settings.nodeIPs.map((ip) => ip.includes(":") ? "::1" : "127.0.0.1");
    config.searches = ["."];
  }
  const extra = pod.spec?.dnsConfig;
  if (extra) {
    config = {
      servers: unique([...config.servers, ...(extra.nameservers ?? [])]),
      searches: unique([...config.searches, ...(extra.searches ?? [])]),
      options: mergeOptions(
        config.options,
        (extra.options ?? []).map((o) =>
          o.value !== undefined ? `${o.name}:${o.value}` : o.name ?? ""
        ),
      ),
    };
  }
  return {
    ...config,
    servers: config.servers.slice(0, MAX_NAMESERVERS),
    searches: fit(config.searches),
  };
}

function clusterSearches(hostSearch: string[], pod: Pod, domain: string): string[] {
  if (!domain) return hostSearch;
  const ns = pod.metadata?.namespace ?? "default";
  return unique([`${ns}.svc.${domain}`, `svc.${domain}`, domain, ...hostSearch]);
}

/** `formDNSSearchFitsLimits`: at most 32 paths, none over 253 characters, 2048 in all. */
function fit(searches: string[]): string[] {
  let kept = searches.slice(0, MAX_SEARCH_PATHS).filter((s) => s.length <= MAX_SUBDOMAIN);
  let length = kept.join(" ").length;
  if (length > MAX_SEARCH_CHARS) {
    let cut = 0;
    for (let i = kept.length - 1; i >= 0; i--) {
      length -= kept[i].length + 1;
      cut++;
      if (length <= MAX_SEARCH_CHARS) break;
    }
    kept = kept.slice(0, kept.length - cut);
  }
  return kept;
}

/** `mergeDNSOptions`: later options replace earlier ones of the same name, in place. */
function mergeOptions(existing: string[], added: string[]): string[] {
  const merged = new Map<string, string>();
  for (const option of [...existing, ...added]) {
    const colon = option.indexOf(":");
    if (colon >= 0) merged.set(option.slice(0, colon), option.slice(colon + 1));
    else merged.set(option, "");
  }
  return [...merged].map(([name, value]) => value ? `${name}:${value}` : name);
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}

/** The resolv.conf a runtime writes from `config` (containerd `parseDNSOptions`). */
export function resolvConfContent(config: DnsConfig): string {
  let text = "";
  if (config.searches.length) text += `search ${config.searches.join(" ")}\n`;
  if (config.servers.length) text += `nameserver ${config.servers.join("\nnameserver ")}\n`;
  if (config.options.length) text += `options ${config.options.join(" ")}\n`;
  return text;
}

/** The pod's hostname and domain (`GeneratePodHostNameAndDomain`). */
export function podHostnameAndDomain(
  pod: Pod,
  clusterDomain: string,
): { hostname: string; domain: string } {
  let hostname = pod.spec?.hostname || (pod.metadata?.name ?? "");
  // truncatePodHostnameIfNeeded: at most 63, without a trailing '-' or '.'.
  if (hostname.length > 63) hostname = hostname.slice(0, 63).replace(/[-.]+$/, "");
  const subdomain = pod.spec?.subdomain;
  const domain = subdomain ? `${subdomain}.${pod.metadata?.namespace}.svc.${clusterDomain}` : "";
  return { hostname, domain };
}

/** `hostsEntriesFromHostAliases`: a blank line, a header, one line per IP. */
function aliasEntries(aliases: HostAlias[] | undefined): string {
  if (!aliases?.length) return "";
  let text = "\n# Entries added by HostAliases.\n";
  for (const alias of aliases) text += `${alias.ip}\t${(alias.hostnames ?? []).join("\t")}\n`;
  return text;
}

/** `managedHostsFileContent`: the hosts file of a pod with its own network. */
export function managedHostsContent(
  podIPs: string[],
  hostname: string,
  domain: string,
  aliases?: HostAlias[],
): string {
  let text = "# Kubernetes-managed hosts file.\n" +
    "127.0.0.1\tlocalhost\n" +
    "::1\tlocalhost ip6-localhost ip6-loopback\n" +
    "fe00::0\tip6-localnet\n" +
    "fe00::0\tip6-mcastprefix\n" +
    "fe00::1\tip6-allnodes\n" +
    "fe00::2\tip6-allrouters\n";
  for (const ip of podIPs) {
    text += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  }
  return text + aliasEntries(aliases);
}

/** `nodeHostsFileContent`: the hosts file of a host-network pod (the node's, and its aliases). */
export function nodeHostsContent(nodeHosts: string, aliases?: HostAlias[]): string {
  return "# Kubernetes-managed hosts file (host network).\n" + nodeHosts + aliasEntries(aliases);
}
