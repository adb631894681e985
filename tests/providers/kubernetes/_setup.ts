/**
 * Two clusters for the kubernetes provider's integration tests: B with a process-provider node
 * of its own (so forwarded pods really run) and a least-privilege identity for the provider;
 * A with the virtual node whose provider forwards to B.
 * @module
 */
import assert from "node:assert/strict";
import { KubeClient } from "../../../k8s/mod.ts";
import { type TestCluster, useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { killMarkedProcesses } from "../../../tools/harness/processes.ts";

/** Options for {@link downstreamRbac}. */
export interface DownstreamRbacOptions {
  /**
   * `gateway` (with `namespaces: same`): the gateway's namespace, made here, where the identity
   * may write the gateway's Deployment, ServiceAccount and Secret; and EndpointSlices in every
   * namespace (the reflected Services').
   */
  gatewayNamespace?: string;
}

/**
 * The RBAC the provider's identity needs in B: nothing more. With `namespaces: same` the
 * namespaced rules hold in every namespace, and namespaces may be created and deleted.
 */
export function downstreamRbac(
  user: string,
  namespace: string,
  same = false,
  extraRules: unknown[] = [],
  options: DownstreamRbacOptions = {},
): unknown[] {
  if (same && options.gatewayNamespace) {
    return [
      ...gatewayRbac(user, options.gatewayNamespace),
      ...sameNamespacesRbac(user, [...GATEWAY_CLUSTER_RULES, ...extraRules]),
    ];
  }
  if (same) return sameNamespacesRbac(user, extraRules);
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: `${user}-capacity` },
      rules: [
        { apiGroups: [""], resources: ["nodes", "pods"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["metrics.k8s.io"], resources: ["pods"], verbs: ["get", "list"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `${user}-capacity` },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: `${user}-capacity`,
      },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "vkubelet-forward", namespace },
      rules: [
        {
          apiGroups: [""],
          resources: ["pods", "configmaps", "secrets"],
          verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
        },
        { apiGroups: [""], resources: ["events"], verbs: ["get", "list", "watch"] },
        { apiGroups: [""], resources: ["pods/log"], verbs: ["get"] },
        {
          apiGroups: [""],
          resources: ["pods/exec", "pods/attach", "pods/portforward"],
          verbs: ["get", "create"],
        },
        ...extraRules,
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "vkubelet-forward", namespace },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "vkubelet-forward" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    },
  ];
}

/** `gateway`: the reflected Services' EndpointSlices, in every namespace with forwarded pods. */
const GATEWAY_CLUSTER_RULES = [{
  apiGroups: ["discovery.k8s.io"],
  resources: ["endpointslices"],
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
}];

/**
 * `gateway`: its namespace and, only there, its Deployment and ServiceAccount (Secrets and
 * pods are in the namespaced rules of `namespaces: same` already). The ServiceAccount gets no Role.
 */
function gatewayRbac(user: string, namespace: string): unknown[] {
  return [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "vkubelet-gateway", namespace },
      rules: [
        {
          apiGroups: ["apps"],
          resources: ["deployments"],
          verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
        },
        { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["get", "create"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "vkubelet-gateway", namespace },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "vkubelet-gateway" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    },
  ];
}

function sameNamespacesRbac(user: string, extraRules: unknown[]): unknown[] {
  const subjects = [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }];
  return [{
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: `${user}-capacity` },
    rules: [
      { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] },
      { apiGroups: ["metrics.k8s.io"], resources: ["pods"], verbs: ["get", "list"] },
      { apiGroups: [""], resources: ["namespaces"], verbs: ["get", "create", "delete"] },
      {
        apiGroups: [""],
        resources: ["pods", "configmaps", "secrets", "services"],
        verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
      },
      { apiGroups: [""], resources: ["events"], verbs: ["get", "list", "watch"] },
      { apiGroups: [""], resources: ["pods/log"], verbs: ["get"] },
      {
        apiGroups: [""],
        resources: ["pods/exec", "pods/attach", "pods/portforward"],
        verbs: ["get", "create"],
      },
      ...extraRules,
    ],
  }, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `${user}-capacity` },
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: `${user}-capacity`,
    },
    subjects,
  }];
}

/** Both clusters, both nodes and admin clients. */
export interface TwoClusters {
  a: TestCluster;
  b: TestCluster;
  adminA: KubeClient;
  adminB: KubeClient;
  /** The virtual node in A. */
  virtualNode: RunningVkubelet;
  /** B's own node (process provider); the first of {@link nodesB}. */
  nodeB: RunningVkubelet;
  /** Every node of B the provider selects. */
  nodesB: RunningVkubelet[];
  /** Stops the virtual node's vkubelet and starts it again with the same identity and config. */
  restartVirtualNode(): Promise<void>;
  /** Where forwarded pods go in B. */
  namespaceB: string;
  /** Where the test's pods live in A. */
  namespaceA: string;
  /** Scheduling for A pods: onto the virtual node. */
  placement: { nodeSelector: Record<string, string>; tolerations: unknown[] };
  close(): Promise<void>;
}

/** Options for {@link twoClusters}. */
export interface TwoClustersOptions {
  /** More provider config fields (over kubeconfig, namespace, nodeSelector, tolerations). */
  providerConfig?: Record<string, unknown>;
  /**
   * B's nodes (process provider), each with its capacity and labels; default one node with the
   * host's capacity. With several, the provider selects them by a pool label they share.
   */
  nodesB?: {
    capacity?: Record<string, string>;
    labels?: Record<string, string>;
    /** More process-provider config fields for this node. */
    providerConfig?: Record<string, unknown>;
  }[];
  /** More RBAC rules for the provider's identity in B (in its namespace, or cluster-wide). */
  rulesB?: unknown[];
  /** RBAC rules for the virtual node's identity in A beyond the Node authorizer's (cluster-wide). */
  rulesA?: unknown[];
  /** `gateway`: B's namespace for it, made with the provider's rights there. */
  gatewayNamespace?: string;
  /** More flags for the virtual node's vkubelet (`--remote-pod-network=…`). */
  virtualNodeArgs?: string[];
}

/** Brings up B's node, the provider's identity and the virtual node in A. */
export async function twoClusters(options: TwoClustersOptions = {}): Promise<TwoClusters> {
  const [a, b] = await Promise.all([useCluster(), useCluster("b")]);
  const suffix = crypto.randomUUID().slice(0, 6);
  const namespaceB = await b.newNamespace("offload");
  const namespaceA = await a.newNamespace("kprov");
  const pool = { "vkubelet-test/pool": `kb-${suffix}` };
  const nodesB: RunningVkubelet[] = [];
  const stateDirs: string[] = [];
  for (const [i, node] of (options.nodesB ?? [{}]).entries()) {
    const stateDir = await Deno.makeTempDir({ prefix: "vk-kprov-b-" });
    stateDirs.push(stateDir);
    nodesB.push(
      await startVkubelet(b, {
        nodeName: i === 0 ? `kb-${suffix}` : `kb-${suffix}-${i}`,
        logFile: Deno.env.get("KPROV_LOG_DIR")
          ? `${Deno.env.get("KPROV_LOG_DIR")}/node-b${i || ""}.log`
          : undefined,
        provider: "process",
        providerConfig: JSON.stringify({
          stateDir,
          cgroups: "off",
          ...(node.capacity ? { capacity: node.capacity } : {}),
          labels: { ...pool, ...node.labels },
          ...node.providerConfig,
        }),
      }).catch(async (err) => {
        for (const n of nodesB) await n.stop();
        throw err;
      }),
    );
  }
  const nodeB = nodesB[0];
  const user = `vkubelet-forwarder-${suffix}`;
  const apply = await b.kubectl(["apply", "-f", "-"], {
    stdin: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: downstreamRbac(
        user,
        namespaceB,
        options.providerConfig?.namespaces === "same",
        options.rulesB,
        { gatewayNamespace: options.gatewayNamespace },
      ),
    }),
  });
  assert.equal(apply.code, 0, apply.stderr);
  const kubeconfigB = await b.userKubeconfig(user);
  const logDir = Deno.env.get("KPROV_LOG_DIR"); // set to keep both vkubelets' logs
  const virtualNodeName = `vk-k8s-${suffix}`;
  if (options.rulesA) {
    const applyA = await a.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: clusterRoleFor(`system:node:${virtualNodeName}`, `${user}-upstream`, options.rulesA),
      }),
    });
    assert.equal(applyA.code, 0, applyA.stderr);
  }
  const virtualNode = await startVkubelet(a, {
    nodeName: virtualNodeName,
    logFile: logDir ? `${logDir}/virtual-node.log` : undefined,
    provider: "kubernetes",
    providerConfig: JSON.stringify({
      kubeconfig: kubeconfigB,
      namespace: namespaceB,
      nodeSelector: options.nodesB ? pool : { "kubernetes.io/hostname": nodeB.nodeName },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
      ...options.providerConfig,
    }),
    args: options.virtualNodeArgs,
  }).catch(async (err) => {
    for (const n of nodesB) await n.stop();
    throw err;
  });
  const adminA = await KubeClient.fromConfig({ kubeconfig: a.kubeconfigPath });
  const adminB = await KubeClient.fromConfig({ kubeconfig: b.kubeconfigPath });
  const env: TwoClusters = {
    a,
    b,
    adminA,
    adminB,
    virtualNode,
    nodeB,
    nodesB,
    namespaceA,
    namespaceB,
    placement: {
      nodeSelector: { "kubernetes.io/hostname": virtualNode.nodeName },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
    },
    async restartVirtualNode() {
      await env.virtualNode.stop();
      env.virtualNode = await startVkubelet(a, {
        nodeName: env.virtualNode.nodeName,
        like: env.virtualNode,
        logFile: logDir ? `${logDir}/virtual-node.log` : undefined,
        provider: "kubernetes",
        args: options.virtualNodeArgs,
      });
    },
    async close() {
      await env.virtualNode.stop();
      for (const n of nodesB) await n.stop();
      for (const dir of stateDirs) await removeNodeState(dir);
      adminA.close();
      adminB.close();
      await a.kubectl(["delete", "node", env.virtualNode.nodeName, "--wait=false"]);
      await b.kubectl(["delete", "node", ...nodesB.map((n) => n.nodeName), "--wait=false"]);
      await b.kubectl(["delete", "clusterrole,clusterrolebinding", `${user}-capacity`]);
      if (options.gatewayNamespace) {
        await b.kubectl(["delete", "namespace", options.gatewayNamespace, "--wait=false"]);
      }
      if (options.rulesA) {
        await a.kubectl(["delete", "clusterrole,clusterrolebinding", `${user}-upstream`]);
      }
    },
  };
  return env;
}

/** A ClusterRole `name` with `rules` and its binding to `user`. */
function clusterRoleFor(user: string, name: string, rules: unknown[]): unknown[] {
  return [
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name }, rules },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    },
  ];
}

/** Cluster B as the kubernetes provider sees it: a real node to run pods, a namespace, an identity. */
export interface Downstream {
  b: TestCluster;
  /** B's own node (process provider). */
  nodeB: RunningVkubelet;
  /** Where forwarded pods go in B. */
  namespaceB: string;
  /** The provider's least-privilege identity in B. */
  kubeconfigB: string;
  /** The provider's config (kubeconfig, namespace, nodeSelector and toleration for B's node). */
  providerConfig: Record<string, unknown>;
  close(): Promise<void>;
}

/** Brings up B's node (process provider), a namespace and the provider's identity in B. */
export async function downstreamCluster(suffix: string): Promise<Downstream> {
  const b = await useCluster("b");
  const namespaceB = await b.newNamespace("offload");
  const stateDir = await Deno.makeTempDir({ prefix: "vk-kprov-b-" });
  const logDir = Deno.env.get("KPROV_LOG_DIR"); // set to keep the vkubelets' logs
  const nodeB = await startVkubelet(b, {
    nodeName: `kb-${suffix}`,
    logFile: logDir ? `${logDir}/node-b.log` : undefined,
    provider: "process",
    providerConfig: JSON.stringify({ stateDir, cgroups: "off" }),
  });
  const user = `vkubelet-forwarder-${suffix}`;
  const apply = await b.kubectl(["apply", "-f", "-"], {
    stdin: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: downstreamRbac(user, namespaceB),
    }),
  });
  assert.equal(apply.code, 0, apply.stderr);
  const kubeconfigB = await b.userKubeconfig(user);
  return {
    b,
    nodeB,
    namespaceB,
    kubeconfigB,
    providerConfig: {
      kubeconfig: kubeconfigB,
      namespace: namespaceB,
      nodeSelector: { "kubernetes.io/hostname": nodeB.nodeName },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
    },
    async close() {
      await nodeB.stop();
      await b.kubectl(["delete", "node", nodeB.nodeName, "--wait=false"]);
      await b.kubectl(["delete", "clusterrole,clusterrolebinding", `${user}-capacity`]);
      await b.kubectl(["delete", "namespace", namespaceB, "--wait=false"]);
      await removeNodeState(stateDir);
    },
  };
}

/**
 * Ends what B's process-provider node left running (a stopped vkubelet leaves its pods, as on a
 * restart: every container's runner names a path under `stateDir`) and removes its state dir.
 */
async function removeNodeState(stateDir: string): Promise<void> {
  await killMarkedProcesses({ cmdline: `${stateDir}/` });
  await Deno.remove(stateDir, { recursive: true }).catch(() => {});
}
