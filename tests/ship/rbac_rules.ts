/**
 * The RBAC vkubelet needs when it runs as a ServiceAccount (the chart's modes files and csr, the
 * high-availability set in deploy/kubernetes/ha/), as reviewed against the code: one entry per
 * API call site (the same list, with the same reasons, as the comments in the chart's
 * templates/rbac.yaml), narrowed to this node's objects where RBAC can say so. When the code
 * starts or stops making a call, change both; tests/ship/manifests_test.ts fails while they
 * differ, and runs vkubelet with exactly these permissions.
 * @module
 */

/** One RBAC rule: API group, resource (with subresource), verbs. */
export interface Rule {
  group: string;
  resource: string;
  verbs: string[];
  /** Only these objects (resourceNames): the node, or its Lease and its election Lease. */
  names?: "node" | "leases";
  /** In a Role of this namespace rather than the ClusterRole. */
  namespace?: "kube-node-lease";
  /** Only for providers that request service account tokens (not mock, fargate). */
  tokens?: true;
  /** The code that makes the call. */
  why: string;
}

/** Every permission vkubelet (core, process and kubernetes providers) uses, by resource. */
export const VKUBELET_RULES: readonly Rule[] = [
  {
    group: "",
    resource: "nodes",
    verbs: ["get", "patch"],
    names: "node",
    why: "core/node/node_api.ts getNode, patchNode (cordon)",
  },
  {
    group: "",
    resource: "nodes",
    verbs: ["create"],
    why: "core/node/node_api.ts createNode (a create names no object RBAC could match)",
  },
  {
    group: "",
    resource: "nodes/status",
    verbs: ["patch"],
    names: "node",
    why: "node_api.ts patchNodeStatus",
  },
  {
    group: "coordination.k8s.io",
    resource: "leases",
    verbs: ["get", "update"],
    names: "leases",
    namespace: "kube-node-lease",
    why: "core/node/lease_controller.ts; k8s/leader_election/elector.ts (--leader-elect)",
  },
  {
    group: "coordination.k8s.io",
    resource: "leases",
    verbs: ["create"],
    namespace: "kube-node-lease",
    why: "the same, creating either Lease",
  },
  {
    group: "",
    resource: "pods",
    verbs: ["get", "list", "watch", "delete"],
    why: "pod informer; status_sync.ts get after 409; pod_sync.ts final delete",
  },
  { group: "", resource: "pods/status", verbs: ["update"], why: "status_sync.ts updateStatus" },
  { group: "", resource: "events", verbs: ["create", "patch"], why: "core/pods/events.ts" },
  {
    group: "",
    resource: "configmaps",
    verbs: ["get", "list", "watch"],
    why: "config_sources.ts per-object informers; providers' volume sources",
  },
  {
    group: "",
    resource: "secrets",
    verbs: ["get", "list", "watch"],
    why: "config_sources.ts per-object informers; providers' volume sources",
  },
  {
    group: "",
    resource: "services",
    verbs: ["list", "watch"],
    why: "pod_controller.ts services informer (service links)",
  },
  {
    group: "",
    resource: "persistentvolumeclaims",
    verbs: ["get"],
    why: "core/pods/preflight.ts (claims bound before start); process provider's claim volumes",
  },
  {
    group: "",
    resource: "persistentvolumes",
    verbs: ["get"],
    why: "providers/process/volumes/kube_source.ts: the PersistentVolume of a pod's bound claim",
  },
  {
    group: "",
    resource: "serviceaccounts/token",
    verbs: ["create"],
    tokens: true,
    why: "projected service account tokens (process, kubernetes and other providers)",
  },
  {
    group: "authentication.k8s.io",
    resource: "tokenreviews",
    verbs: ["create"],
    why: "core/kubelet_api/reviews.ts bearer tokens",
  },
  {
    group: "authorization.k8s.io",
    resource: "subjectaccessreviews",
    verbs: ["create"],
    why: "core/kubelet_api/reviews.ts authorization of every request",
  },
  {
    group: "certificates.k8s.io",
    resource: "certificatesigningrequests",
    verbs: ["create", "watch"],
    why: "x509/csr_certificate.ts kubelet-serving CSR",
  },
];

/**
 * The reviewed rules for node `nodeName` and provider `provider`, keyed
 * `<namespace or *>|<group>|<resource>|<resourceNames, comma-separated>` -> sorted verbs.
 */
export function expectedRules(nodeName: string, provider: string): Map<string, string[]> {
  const names = { node: [nodeName], leases: [nodeName, `vkubelet-${nodeName}`] };
  const out = new Map<string, string[]>();
  for (const rule of VKUBELET_RULES) {
    if (rule.tokens && ["mock", "fargate"].includes(provider)) continue;
    const key = [
      rule.namespace ?? "*",
      rule.group,
      rule.resource,
      (rule.names ? names[rule.names] : []).join(","),
    ].join("|");
    out.set(key, [...new Set([...(out.get(key) ?? []), ...rule.verbs])].sort());
  }
  return out;
}

/** A rendered ClusterRole's or Role's rules. */
export interface RenderedRule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

/** Rendered rules in the keys of {@link expectedRules}; `namespace` undefined for a ClusterRole. */
export function flattenRules(
  rules: readonly RenderedRule[],
  namespace: string | undefined,
  into = new Map<string, string[]>(),
): Map<string, string[]> {
  for (const rule of rules) {
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        const key = [namespace ?? "*", group, resource, (rule.resourceNames ?? []).join(",")]
          .join("|");
        into.set(key, [...new Set([...(into.get(key) ?? []), ...rule.verbs])].sort());
      }
    }
  }
  return into;
}
