/**
 * A pod's /etc/resolv.conf and /etc/hosts, compared byte for byte with what the kubelet (and its
 * runtime) writes for the same spec: the expected texts are written out by hand from
 * kubernetes/kubernetes pkg/kubelet/network/dns/dns.go `GetPodDNS` (with containerd's
 * `parseDNSOptions` line format) and pkg/kubelet/kubelet_pods.go `managedHostsFileContent`,
 * `nodeHostsFileContent` and `hostsEntriesFromHostAliases`.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type DnsSettings,
  managedHostsContent,
  nodeHostsContent,
  podDnsConfig,
  podHostnameAndDomain,
  resolvConfContent,
} from "../../../providers/process/network/dns.ts";
import { portMappings } from "../../../providers/process/network/pod_network.ts";

const HOST_RESOLV = "# the node's\nnameserver 192.0.2.53\nnameserver 192.0.2.54\n" +
  "search corp.example lab.example.\noptions rotate timeout:2\n";

const settings: DnsSettings = {
  clusterDNS: ["10.96.0.10"],
  clusterDomain: "cluster.local",
  hostResolvConf: HOST_RESOLV,
  nodeIPs: ["192.0.2.10"],
};

function pod(spec: Partial<NonNullable<Pod["spec"]>> = {}): Pod {
  return {
    metadata: { namespace: "shop", name: "web-0", uid: "u" },
    spec: { containers: [{ name: "c" }], ...spec },
  };
}

function resolv(p: Pod, s: DnsSettings = settings, warn?: (m: string) => void): string {
  return resolvConfContent(podDnsConfig(p, s, warn));
}

Deno.test("ClusterFirst: cluster DNS, the namespace's search path before the node's, ndots:5", () => {
  assert.equal(
    resolv(pod()),
    "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\n" +
      "nameserver 10.96.0.10\n" +
      "options ndots:5\n",
  );
});

Deno.test("Default, and ClusterFirst with hostNetwork: the node's resolv.conf", () => {
  const expected = "search corp.example lab.example\n" +
    "nameserver 192.0.2.53\nnameserver 192.0.2.54\n" +
    "options rotate timeout:2\n";
  assert.equal(resolv(pod({ dnsPolicy: "Default" })), expected);
  assert.equal(resolv(pod({ dnsPolicy: "ClusterFirst", hostNetwork: true })), expected);
});

Deno.test("ClusterFirstWithHostNet with hostNetwork: cluster DNS", () => {
  assert.equal(
    resolv(pod({ dnsPolicy: "ClusterFirstWithHostNet", hostNetwork: true })),
    "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\n" +
      "nameserver 10.96.0.10\n" +
      "options ndots:5\n",
  );
});

Deno.test("None with dnsConfig: only the pod's settings", () => {
  const p = pod({
    dnsPolicy: "None",
    dnsConfig: {
      nameservers: ["1.1.1.1", "1.0.0.1"],
      searches: ["my.example"],
      options: [{ name: "ndots", value: "2" }, { name: "edns0" }],
    },
  });
  assert.equal(
    resolv(p),
    "search my.example\nnameserver 1.1.1.1\nnameserver 1.0.0.1\noptions ndots:2 edns0\n",
  );
});

Deno.test("dnsConfig is merged into ClusterFirst: an option of the same name replaces it", () => {
  const p = pod({
    dnsConfig: {
      nameservers: ["10.96.0.10", "192.0.2.99"],
      searches: ["extra.example", "cluster.local"],
      options: [{ name: "ndots", value: "1" }],
    },
  });
  assert.equal(
    resolv(p),
    "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example extra.example\n" +
      "nameserver 10.96.0.10\nnameserver 192.0.2.99\n" +
      "options ndots:1\n",
  );
});

Deno.test("ClusterFirst without cluster DNS falls back to Default, with the kubelet's warning", () => {
  const warnings: string[] = [];
  const text = resolv(pod(), { ...settings, clusterDNS: [] }, (m) => warnings.push(m));
  assert.equal(
    text,
    "search corp.example lab.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\noptions rotate timeout:2\n",
  );
  assert.match(warnings[0], /does not have ClusterDNS IP configured/);
});

Deno.test("--resolv-conf empty: Default pods get the node's loopback and the root search", () => {
  assert.equal(
    resolv(pod({ dnsPolicy: "Default" }), { ...settings, hostResolvConf: undefined }),
    "search .\nnameserver 127.0.0.1\n",
  );
});

Deno.test("at most three nameservers are kept, as the kubelet cuts them", () => {
  const p = pod({
    dnsPolicy: "None",
    dnsConfig: { nameservers: ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"] },
  });
  assert.equal(resolv(p), "nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\n");
});

const MANAGED_HEAD = "# Kubernetes-managed hosts file.\n" +
  "127.0.0.1\tlocalhost\n" +
  "::1\tlocalhost ip6-localhost ip6-loopback\n" +
  "fe00::0\tip6-localnet\n" +
  "fe00::0\tip6-mcastprefix\n" +
  "fe00::1\tip6-allnodes\n" +
  "fe00::2\tip6-allrouters\n";

Deno.test("hosts: the pod's IP and name, its FQDN with a subdomain, and hostAliases", () => {
  const plain = podHostnameAndDomain(pod(), "cluster.local");
  assert.equal(
    managedHostsContent(["198.19.1.5"], plain.hostname, plain.domain),
    MANAGED_HEAD + "198.19.1.5\tweb-0\n",
  );
  const p = pod({
    hostname: "db",
    subdomain: "backend",
    hostAliases: [{ ip: "192.0.2.7", hostnames: ["foo.local", "bar.local"] }, {
      ip: "192.0.2.8",
      hostnames: ["baz"],
    }],
  });
  const named = podHostnameAndDomain(p, "cluster.local");
  assert.equal(
    managedHostsContent(["198.19.1.5"], named.hostname, named.domain, p.spec?.hostAliases),
    MANAGED_HEAD + "198.19.1.5\tdb.backend.shop.svc.cluster.local\tdb\n" +
      "\n# Entries added by HostAliases.\n" +
      "192.0.2.7\tfoo.local\tbar.local\n" +
      "192.0.2.8\tbaz\n",
  );
});

Deno.test("hosts of a host-network pod: the node's file under its own header, then aliases", () => {
  const node = "127.0.0.1\tlocalhost\n192.0.2.10\tnode1\n";
  assert.equal(
    nodeHostsContent(node, [{ ip: "192.0.2.7", hostnames: ["foo"] }]),
    "# Kubernetes-managed hosts file (host network).\n" + node +
      "\n# Entries added by HostAliases.\n192.0.2.7\tfoo\n",
  );
});

Deno.test("hostPorts become the portMappings capability, protocol in lower case", () => {
  const p = pod({
    containers: [{
      name: "c",
      ports: [
        { containerPort: 8080, hostPort: 18080 },
        { containerPort: 53, hostPort: 1053, protocol: "UDP", hostIP: "192.0.2.10" },
        { containerPort: 9090 },
      ],
    }],
  });
  assert.deepEqual(portMappings(p), [
    { hostPort: 18080, containerPort: 8080, protocol: "tcp", hostIP: "" },
    { hostPort: 1053, containerPort: 53, protocol: "udp", hostIP: "192.0.2.10" },
  ]);
});
