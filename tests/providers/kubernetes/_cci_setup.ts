/**
 * A CCI stand-in for the kubernetes provider's `profile: cci` tests: a local cluster named
 * `cci` whose apiserver also accepts a static bearer token (the one the test exec credential
 * plugin hands out), enforces CCI's documented pod rules with a ValidatingAdmissionPolicy
 * (`cci_rules.yaml`) in namespaces labelled for it, and has a process-provider node so that
 * admitted pods really run. Not CCI itself, which these machines cannot reach.
 * @module
 */
import assert from "node:assert/strict";
import { clusterPaths } from "../../../tools/cluster/cluster.ts";
import { type TestCluster, useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { downstreamRbac } from "./_setup.ts";

const here = new URL(".", import.meta.url).pathname;
/** The identity of the static token. */
export const CCI_USER = "cci-forwarder";

/** The static token file of the `cci` cluster, written once (the apiserver reads it at start). */
export async function cciTokenFile(): Promise<string> {
  const dir = clusterPaths("cci").dir;
  const path = `${dir}/tokens.csv`;
  try {
    await Deno.stat(path);
  } catch {
    await Deno.mkdir(dir, { recursive: true });
    const token = Array.from(crypto.getRandomValues(new Uint8Array(24)))
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    await Deno.writeTextFile(path, `${token},${CCI_USER},${CCI_USER}-uid,"cci-users"\n`, {
      mode: 0o600,
    });
  }
  return path;
}

/** What {@link cciCluster} gives. */
export interface CciCluster {
  cluster: TestCluster;
  /** The namespace pods are forwarded to: flavor-annotated, with a Network, rules enforced. */
  namespace: string;
  /** Writes a kubeconfig whose user is the test exec plugin; its runs are counted in `runs`. */
  pluginKubeconfig(env?: Record<string, string>): Promise<{ path: string; runs: () => number }>;
  close(): Promise<void>;
}

/** The `cci` cluster with the rules applied and a prepared namespace for {@link CCI_USER}. */
export async function cciCluster(): Promise<CciCluster> {
  const cluster = await useCluster("cci", { tokenAuthFile: await cciTokenFile() });
  const rules = await cluster.kubectl(["apply", "-f", `${here}cci_rules.yaml`]);
  assert.equal(rules.code, 0, rules.stderr);
  const namespace = await cluster.newNamespace("cci");
  const kubectl = cluster.kubectlIn(namespace);
  await cluster.kubectl(["label", "namespace", namespace, "vkubelet.io/cci-rules=enforced"]);
  await cluster.kubectl([
    "annotate",
    "namespace",
    namespace,
    "namespace.kubernetes.io/flavor=general-computing",
  ]);
  await kubectl(["apply", "-f", "-"], JSON.stringify(network(namespace)));
  const apply = await cluster.kubectl(["apply", "-f", "-"], {
    stdin: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [...downstreamRbac(CCI_USER, namespace), ...cciRbac(namespace)],
    }),
  });
  assert.equal(apply.code, 0, apply.stderr);
  const scratch = await Deno.makeTempDir({ prefix: "vk-cci-" });
  let serial = 0;
  return {
    cluster,
    namespace,
    async pluginKubeconfig(env = {}) {
      const runsFile = `${scratch}/runs-${++serial}`;
      await Deno.writeTextFile(runsFile, "");
      const path = `${scratch}/plugin-${serial}.kubeconfig`;
      const ca = btoa(await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`));
      const vars = { CCI_TOKEN_FILE: await cciTokenFile(), CCI_PLUGIN_RUNS: runsFile, ...env };
      await Deno.writeTextFile(
        path,
        JSON.stringify({
          apiVersion: "v1",
          kind: "Config",
          clusters: [{
            name: "cci",
            cluster: { server: cluster.server, "certificate-authority-data": ca },
          }],
          users: [{
            name: "iam",
            user: {
              exec: {
                apiVersion: "client.authentication.k8s.io/v1",
                command: "sh",
                args: [`${here}cci_token_plugin.sh`],
                env: Object.entries(vars).map(([name, value]) => ({ name, value })),
                interactiveMode: "Never",
              },
            },
          }],
          contexts: [{ name: "cci", context: { cluster: "cci", user: "iam" } }],
          "current-context": "cci",
        }),
        { mode: 0o600 },
      );
      const runs = () => Deno.readTextFileSync(runsFile).split("\n").filter(Boolean).length;
      return { path, runs };
    },
    async close() {
      await cluster.kubectl(["delete", "namespace", namespace, "--wait=false"]);
      await cluster.kubectl([
        "delete",
        "clusterrole,clusterrolebinding",
        `${CCI_USER}-capacity`,
        `${CCI_USER}-cci-${namespace}`,
        "--ignore-not-found",
      ]);
      await Deno.remove(scratch, { recursive: true });
    },
  };
}

/** B's own node, running admitted pods as local processes. */
export function cciNode(cci: CciCluster, nodeName: string): Promise<RunningVkubelet> {
  return startVkubelet(cci.cluster, {
    nodeName,
    provider: "process",
    providerConfig: JSON.stringify({ stateDir: Deno.makeTempDirSync(), cgroups: "off" }),
  });
}

/** A stand-in for CCI's Network object (VPC and subnet IDs are made up). */
function network(namespace: string) {
  return {
    apiVersion: "networking.cci.io/v1beta1",
    kind: "Network",
    metadata: { name: "default-network", namespace },
    spec: { cidr: "192.168.0.0/24", attachedVPC: "vpc-test", networkID: "net-test" },
  };
}

/** What `profile: cci` reads besides the pod RBAC: its namespace and the Networks in it. */
function cciRbac(namespace: string): unknown[] {
  const name = `${CCI_USER}-cci-${namespace}`;
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name },
      rules: [{
        apiGroups: [""],
        resources: ["namespaces"],
        resourceNames: [namespace],
        verbs: ["get"],
      }, { apiGroups: ["networking.cci.io"], resources: ["networks"], verbs: ["get", "list"] }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: CCI_USER }],
    },
  ];
}
