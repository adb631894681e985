/**
 * The ClusterRole vkubelet needs, as reviewed against the code: one entry per API call site
 * (the same list, with the same reasons, as the comments in deploy/kubernetes/rbac.yaml). When
 * the code starts or stops making a call, change both; tests/ship/manifests_test.ts fails while
 * they differ, and runs vkubelet with exactly these permissions.
 * @module
 */

/** One RBAC rule: API group, resource (with subresource), verbs. */
export interface Rule {
  group: string;
  resource: string;
  verbs: string[];
  /** The code that makes the call. */
  why: string;
}

/** Every permission vkubelet (core, process and kubernetes providers) uses, by resource. */
export const VKUBELET_RULES: readonly Rule[] = [
  {
    group: "",
    resource: "nodes",
    verbs: ["get", "list", "watch", "create", "patch"],
    why: "core/node/node_api.ts getNode, createNode, patchNode (cordon); with --nodes the " +
      "status checks read one watch of the virtual Nodes (app/heartbeat_api.ts)",
  },
  { group: "", resource: "nodes/status", verbs: ["patch"], why: "node_api.ts patchNodeStatus" },
  {
    group: "coordination.k8s.io",
    resource: "leases",
    verbs: ["get", "create", "update"],
    why: "core/node/lease_controller.ts; k8s/leader_election/elector.ts (--leader-elect)",
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
    why: "providers/process/kube_source.ts: the PersistentVolume of a pod's bound claim",
  },
  {
    group: "",
    resource: "serviceaccounts/token",
    verbs: ["create"],
    why: "projected service account tokens (process, kubernetes providers)",
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
