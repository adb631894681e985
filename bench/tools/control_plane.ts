/**
 * The bench's own control plane: a side-by-side cluster named `vkbench` (tools/cluster), so that
 * other work on the default cluster neither disturbs the numbers nor is disturbed. Every subject
 * run gets it fresh (empty etcd). Also issues the kubelet identity and makes its requests
 * countable: a FlowSchema that matches only that user, so the apiserver's
 * `apiserver_flowcontrol_dispatched_requests_total{flow_schema="vkbench-kubelet"}` counts exactly
 * the kubelet's requests.
 * @module
 */
import {
  type ClusterPaths,
  clusterPaths,
  type ClusterState,
  down,
  readState,
  runChecked,
  running,
  up,
} from "../../tools/cluster/cluster.ts";
import { type Credentials, readCredentials } from "./kube.ts";

// VKBENCH_CLUSTER names another copy, so that a profiling run can go beside a measuring one.
const CLUSTER = Deno.env.get("VKBENCH_CLUSTER") ?? "vkbench";
/** The FlowSchema whose dispatch counter is the kubelet's request count. */
export const FLOW_SCHEMA = "vkbench-kubelet";
/** The user every subject runs as (see RBAC below for why not `system:node:<name>`). */
export const KUBELET_USER = "vkbench:kubelet";
const KUBELET_GROUP = "vkbench:kubelets";

/** A running bench control plane. */
export interface ControlPlane {
  server: string;
  binary: string;
  pki: string;
  admin: Credentials;
  adminKubeconfig: string;
  /** Runs kubectl as the admin; throws on failure. */
  kubectl(args: string[], stdin?: string): Promise<string>;
}

/** Everything a kubelet subject needs to run as the bench identity. */
export interface KubeletIdentity {
  kubeconfig: string;
  clientCert: string;
  clientKey: string;
  servingCert: string;
  servingKey: string;
  ca: string;
}

// virtual-kubelet v1.14.1 cannot run as a node (system:node:<name>, group system:nodes): its node
// carries labels NodeRestriction refuses (kubernetes.io/role, alpha.service-controller...), and it
// lists Secrets, ConfigMaps and Services cluster-wide, which the Node authorizer denies. So every
// subject runs as one ordinary user with this role: what both kubelets need, nothing more.
const RBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: vkbench-kubelet}
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [nodes/status, pods/status]
  verbs: [get, update, patch]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, update, patch, delete]
- apiGroups: [""]
  resources: [configmaps, secrets, services]
  verbs: [get, list, watch]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, update, patch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: vkbench-kubelet}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: vkbench-kubelet}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: ${KUBELET_GROUP}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: ${FLOW_SCHEMA}}
spec:
  priorityLevelConfiguration: {name: system}
  matchingPrecedence: 450
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: "${KUBELET_USER}"}}]
    resourceRules:
    - {verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}
    nonResourceRules:
    - {verbs: ["*"], nonResourceURLs: ["*"]}
`;

/** Stops the bench cluster if it runs. */
export async function stopControlPlane(): Promise<void> {
  await down(clusterPaths(CLUSTER));
}

/** Starts the bench cluster from an empty etcd, with the kubelet role and FlowSchema applied. */
export async function startControlPlane(progress: (line: string) => void): Promise<ControlPlane> {
  const paths = clusterPaths(CLUSTER);
  await down(paths);
  const state = await up({ paths, progress: (l) => progress(`  ${l}`) });
  return await prepare(paths, state);
}

/**
 * Uses the running cluster `name` as it is (the soak's `--cluster`): neither starts nor stops
 * it; applies the kubelet role and FlowSchema, which only match the bench's own user.
 */
export async function attachControlPlane(name: string): Promise<ControlPlane> {
  const paths = clusterPaths(name);
  const state = readState(paths);
  if (!state || Object.values(running(state)).includes(false)) {
    throw new Error(
      `cluster "${name}" is not running; start it with deno task cluster up --name ${name}, or leave --cluster out`,
    );
  }
  return await prepare(paths, state);
}

async function prepare(paths: ClusterPaths, state: ClusterState): Promise<ControlPlane> {
  const admin = await readCredentials(state.server, {
    ca: `${paths.pki}/ca.crt`,
    cert: `${paths.pki}/admin.crt`,
    key: `${paths.pki}/admin.key`,
  });
  const kubectl = (args: string[], stdin?: string) =>
    runChecked(state.binary, ["kubectl", `--kubeconfig=${paths.adminKubeconfig}`, ...args], stdin);
  await kubectl(["apply", "-f", "-"], RBAC);
  return {
    server: state.server,
    binary: state.binary,
    pki: paths.pki,
    admin,
    adminKubeconfig: paths.adminKubeconfig,
    kubectl,
  };
}

/** Issues the kubelet's client and serving certificates and writes its kubeconfig into `dir`. */
export async function issueKubeletIdentity(
  cp: ControlPlane,
  dir: string,
): Promise<KubeletIdentity> {
  await Deno.mkdir(dir, { recursive: true });
  const ca = `${cp.pki}/ca`;
  await runChecked(cp.binary, [
    "cert",
    `--ca=${ca}`,
    `--out=${dir}/client`,
    `--cn=${KUBELET_USER}`,
    `--o=${KUBELET_GROUP}`,
  ]);
  // A serving certificate for the kubelet API on 127.0.0.1, signed by the cluster CA.
  await runChecked(cp.binary, [
    "cert",
    `--ca=${ca}`,
    `--out=${dir}/serving`,
    `--cn=${KUBELET_USER}`,
    "--san=127.0.0.1",
  ]);
  const b64 = async (path: string) => btoa(await Deno.readTextFile(path));
  const kubeconfig = `${dir}/kubelet.kubeconfig`;
  await Deno.writeTextFile(
    kubeconfig,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: bench",
      "  cluster:",
      `    server: ${cp.server}`,
      `    certificate-authority-data: ${await b64(`${ca}.crt`)}`,
      "users:",
      "- name: kubelet",
      "  user:",
      `    client-certificate-data: ${await b64(`${dir}/client.crt`)}`,
      `    client-key-data: ${await b64(`${dir}/client.key`)}`,
      "contexts:",
      "- name: bench",
      "  context: {cluster: bench, user: kubelet}",
      "current-context: bench",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  return {
    kubeconfig,
    clientCert: `${dir}/client.crt`,
    clientKey: `${dir}/client.key`,
    servingCert: `${dir}/serving.crt`,
    servingKey: `${dir}/serving.key`,
    ca: `${ca}.crt`,
  };
}
