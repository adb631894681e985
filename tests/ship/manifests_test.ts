/**
 * deploy/kubernetes/ (the default: vkubelet as its node) and deploy/kubernetes/ha/ (a
 * ServiceAccount, two replicas): the manifests pass the real API server's server-side dry run,
 * with no Pod Security warning from the namespace, which enforces "restricted";
 * the default binds the ServiceAccount to nothing but CSR requests; the high-availability roles
 * are the reviewed list in `rbac_rules.ts`, narrowed to the node's objects; the ConfigMaps' config
 * files are valid; and vkubelet runs with nothing but the chart's roles for its node (a
 * ServiceAccount token; no Node authorizer, no NodeRestriction): CSR-signed serving certificate,
 * node registration and Lease renewal, a pod with ConfigMap/Secret env and a projected token
 * Running, its events and logs, bearer-token authentication (TokenReview) and authorization
 * (SubjectAccessReview) on the kubelet API, the pod's deletion and cordon on shutdown. A missing
 * verb or a resourceName too narrow fails it.
 */
import assert from "node:assert/strict";
import { request } from "node:https";
import { parseAllDocuments } from "yaml";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";
import { loadConfig } from "../../app/config/config.ts";
import { chartRbac } from "../../tools/helm/manifests.ts";
import { expectedRules, flattenRules, type RenderedRule } from "./rbac_rules.ts";
import { podLogs, podPhase, spawnVkubelet } from "./_helpers.ts";
import { eventually } from "../../tools/harness/wait.ts";
import { freePort } from "../../tools/cluster/ports.ts";

const root = new URL("../../", import.meta.url).pathname;
const manifests = `${root}deploy/kubernetes`;
const mainPath = `${root}main.ts`;

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}

async function readManifests(file: string): Promise<K8sObject[]> {
  const text = await Deno.readTextFile(`${manifests}/${file}`);
  return parseAllDocuments(text).map((d) => d.toJS() as K8sObject).filter(Boolean);
}

Deno.test("deploy/kubernetes and its ha set pass the API server's server-side dry run", async () => {
  const cluster = await useCluster();
  // Namespaced objects are checked against their namespace, which a dry run does not create.
  await cluster.kubectl(["apply", "-f", `${manifests}/namespace.yaml`]);
  const sets: [string, string[]][] = [
    [manifests, [
      "serviceaccount/vkubelet",
      "configmap/vkubelet-bootstrap",
      "configmap/vkubelet-config",
      "clusterrolebinding.rbac.authorization.k8s.io/vkubelet-bootstrap",
      "clusterrolebinding.rbac.authorization.k8s.io/vkubelet-autoapprove-rotation",
      "statefulset.apps/vkubelet",
    ]],
    [`${manifests}/ha`, [
      "serviceaccount/vkubelet",
      "clusterrole.rbac.authorization.k8s.io/vkubelet",
      "clusterrolebinding.rbac.authorization.k8s.io/vkubelet",
      "role.rbac.authorization.k8s.io/vkubelet",
      "rolebinding.rbac.authorization.k8s.io/vkubelet",
      "configmap/vkubelet-config",
      "deployment.apps/vkubelet",
      "poddisruptionbudget.policy/vkubelet",
    ]],
  ];
  for (const [dir, expected] of sets) {
    const res = await cluster.kubectl(["apply", "--dry-run=server", "-f", dir]);
    assert.equal(res.code, 0, res.stderr);
    // The namespace warns on workloads whose pods "restricted" would refuse.
    assert.doesNotMatch(res.stderr, /PodSecurity/, res.stderr);
    for (const what of expected) {
      assert.match(res.stdout, new RegExp(`${what} (created|configured|unchanged)`), res.stdout);
    }
  }
});

Deno.test("the namespace enforces, audits and warns on Pod Security restricted", async () => {
  const [namespace] = await readManifests("namespace.yaml");
  const labels = (namespace.metadata as { labels?: Record<string, string> }).labels ?? {};
  for (const mode of ["enforce", "audit", "warn"]) {
    assert.equal(labels[`pod-security.kubernetes.io/${mode}`], "restricted", mode);
    assert.equal(labels[`pod-security.kubernetes.io/${mode}-version`], "latest", mode);
  }
});

Deno.test("by default the ServiceAccount may only request the node's certificate", async () => {
  const objects = [...await readManifests("rbac.yaml"), ...await readManifests("bootstrap.yaml")];
  assert.deepEqual(objects.filter((o) => o.kind === "ClusterRole" || o.kind === "Role"), []);
  const bindings = objects.filter((o) => o.kind.endsWith("Binding")) as (K8sObject & {
    roleRef: { name: string };
    subjects: { kind: string; name: string }[];
  })[];
  assert.deepEqual(
    bindings.map((b) => [b.roleRef.name, b.subjects.map((s) => `${s.kind}/${s.name}`)]),
    [
      ["system:node-bootstrapper", ["ServiceAccount/vkubelet"]],
      [
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        ["User/system:node:vk-in-cluster"],
      ],
    ],
  );
  const [account] = objects.filter((o) => o.kind === "ServiceAccount");
  assert.equal(account.automountServiceAccountToken, false);
});

Deno.test("the ha set's roles are exactly the reviewed list, narrowed to the node", async () => {
  const objects = await readManifests("ha/rbac.yaml");
  const actual = new Map<string, string[]>();
  for (const o of objects.filter((o) => o.kind === "ClusterRole" || o.kind === "Role")) {
    flattenRules(o.rules as RenderedRule[], o.metadata.namespace, actual);
  }
  const expected = expectedRules("vk-in-cluster", "mock");
  assert.deepEqual(Object.fromEntries(actual), Object.fromEntries(expected));
  const bindings = objects.filter((o) => o.kind.endsWith("Binding")) as (K8sObject & {
    roleRef: { name: string };
    subjects: { kind: string; name: string; namespace: string }[];
  })[];
  assert.deepEqual(bindings.map((b) => [b.kind, b.metadata.namespace, b.roleRef.name]), [
    ["ClusterRoleBinding", undefined, "vkubelet"],
    ["RoleBinding", "kube-node-lease", "vkubelet"],
  ]);
  for (const binding of bindings) {
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: "vkubelet", namespace: "vkubelet" },
    ]);
  }
});

Deno.test("each set's config file is valid and the pod IP comes from the downward API", async () => {
  for (const set of ["", "ha/"]) {
    const [configMap] = await readManifests(`${set}configmap.yaml`);
    const files: Record<string, string> = {
      "/etc/vkubelet/config/config.yaml": (configMap.data as Record<string, string>)["config.yaml"],
      "/etc/vkubelet/tls/tls.crt": "",
      "/etc/vkubelet/tls/tls.key": "",
    };
    const [workload] = await readManifests(`${set}workload.yaml`);
    // deno-lint-ignore no-explicit-any
    const container = (workload as any).spec.template.spec.containers[0];
    const loaded = await loadConfig({
      args: container.args,
      env: { VKUBELET_POD_IP: "10.0.0.7" },
      readFile: (path) =>
        path in files ? Promise.resolve(files[path]) : Promise.reject(new Error("no such file")),
    });
    assert.ok(loaded.ok, `${set}: ${JSON.stringify(!loaded.ok && loaded.errors)}`);
    assert.equal(loaded.config.nodeIp, "10.0.0.7");
    assert.deepEqual(container.env.find((e: { name: string }) => e.name === "VKUBELET_POD_IP"), {
      name: "VKUBELET_POD_IP",
      valueFrom: { fieldRef: { fieldPath: "status.podIP" } },
    });
  }
});

Deno.test("the default runs as its node with the bootstrap kubeconfig and token it mounts", async () => {
  const [bootstrap] = (await readManifests("bootstrap.yaml")).filter((o) => o.kind === "ConfigMap");
  const kubeconfig = (bootstrap.data as Record<string, string>).kubeconfig;
  assert.match(kubeconfig, /tokenFile: \/etc\/vkubelet\/bootstrap-credential\/token/);
  assert.doesNotMatch(kubeconfig, /\btoken:/, "no token in the ConfigMap");
  const [workload] = await readManifests("workload.yaml");
  // deno-lint-ignore no-explicit-any
  const spec = (workload as any).spec.template.spec;
  assert.equal(spec.automountServiceAccountToken, false);
  assert.ok(
    spec.containers[0].args.includes("--bootstrap-kubeconfig=/etc/vkubelet/bootstrap/kubeconfig"),
  );
  assert.ok(!spec.containers[0].args.includes("--leader-elect"));
  const credential = spec.volumes.find((v: { name: string }) => v.name === "bootstrap-credential");
  assert.deepEqual(credential.projected.sources[0], {
    serviceAccountToken: { path: "token", expirationSeconds: 3600 },
  });
});

Deno.test("each set survives a CSR waiting for approval and the measured memory peak", async () => {
  for (const set of ["", "ha/"]) {
    const [workload] = await readManifests(`${set}workload.yaml`);
    const [configMap] = await readManifests(`${set}configmap.yaml`);
    // deno-lint-ignore no-explicit-any
    const spec = (workload as any).spec.template.spec;
    const container = spec.containers[0];
    // The liveness probe must not need the kubelet API, which listens only with a certificate.
    const probePort = container.livenessProbe.tcpSocket?.port ??
      container.livenessProbe.httpGet?.port;
    const port = container.ports.find((p: { name: string }) => p.name === probePort);
    assert.notEqual(
      port.containerPort,
      10250,
      "probing the kubelet API restarts a pod whose CSR waits",
    );
    const config = (configMap.data as Record<string, string>)["config.yaml"];
    assert.match(config, new RegExp(`^\\s*metricsAddr: "?:${port.containerPort}"?$`, "m"));
    // Peak RSS at 10,000 pods: 410 MiB in bench/reports/RESULTS.md (556 MiB in the run before).
    const limit = container.resources.limits.memory as string;
    const mib = Number(limit.replace(/Gi$/, "")) * (limit.endsWith("Gi") ? 1024 : 1) ||
      Number(limit.replace(/Mi$/, ""));
    assert.ok(mib >= 768, `memory limit ${limit}`);
  }
  // deno-lint-ignore no-explicit-any
  const ha = (await readManifests("ha/workload.yaml"))[0] as any;
  const tls = ha.spec.template.spec.volumes.find((v: { name: string }) => v.name === "serving-tls");
  assert.equal(tls.secret.optional, true, "without the Secret (CSR mode) the pod still starts");
});

Deno.test("the systemd unit's stop leaves the process provider's pods to be re-adopted", async () => {
  const unit = await Deno.readTextFile(`${root}deploy/systemd/vkubelet.service`);
  const killMode = unit.match(/^KillMode=(\S+)$/m)?.[1];
  // mixed and control-group SIGKILL what is left in the unit's cgroup: the pods.
  assert.equal(killMode, "process");
});

/**
 * Applies the chart's roles for node `nodeName` (release `name`, mode csr: a ServiceAccount with
 * a kubelet-serving CSR), bound to its ServiceAccount in `ns`; the clean-up commands.
 */
async function bindTestRole(cluster: TestCluster, ns: string, name: string, nodeName: string) {
  const rbac = await chartRbac({
    release: name,
    namespace: ns,
    nodeName,
    set: ["--set=certificates.mode=csr", "--set=provider.name=process"],
  });
  const res = await cluster.kubectl(["apply", "-f", "-"], { stdin: rbac.json });
  assert.equal(res.code, 0, res.stderr);
  return rbac.cleanup;
}

async function tokenKubeconfig(cluster: TestCluster, dir: string, token: string) {
  const ca = btoa(await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`));
  const path = `${dir}/sa.kubeconfig`;
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "c",
        cluster: { server: cluster.server, "certificate-authority-data": ca },
      }],
      users: [{ name: "sa", user: { token } }],
      contexts: [{ name: "c", context: { cluster: "c", user: "sa" } }],
      "current-context": "c",
    }),
    { mode: 0o600 },
  );
  return path;
}

/** Approves pending CSRs filed by `username`, as an admin (or an approver) would. */
async function approveCsrsOf(cluster: TestCluster, username: string, approved: Set<string>) {
  const res = await cluster.kubectl(["get", "csr", "-o", "json"]);
  // deno-lint-ignore no-explicit-any
  for (const csr of JSON.parse(res.stdout).items as any[]) {
    if (csr.spec.username !== username || csr.status?.conditions) continue;
    const out = await cluster.kubectl(["certificate", "approve", csr.metadata.name]);
    if (out.code === 0) approved.add(csr.metadata.name);
  }
}

/** GET on the kubelet API with a bearer token; the status code. */
function kubeletStatus(port: number, path: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port,
      path,
      headers: { authorization: `Bearer ${token}` },
      rejectUnauthorized: false,
    }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

function workload(ns: string, nodeName: string): unknown {
  const placement = {
    nodeName,
    tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
    terminationGracePeriodSeconds: 1,
  };
  return {
    apiVersion: "v1",
    kind: "List",
    items: [
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "cm", namespace: ns },
        data: { a: "from-cm" },
      },
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "sec", namespace: ns },
        stringData: { b: "from-secret" },
      },
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "greeter", namespace: ns },
        spec: {
          ...placement,
          containers: [{
            name: "main",
            image: "busybox",
            command: [
              "sh",
              "-c",
              'echo "$A $B token=$(test -s "$T/token" && echo yes)"; exec sleep 3600',
            ],
            env: [
              { name: "A", valueFrom: { configMapKeyRef: { name: "cm", key: "a" } } },
              { name: "B", valueFrom: { secretKeyRef: { name: "sec", key: "b" } } },
              { name: "T", value: "/var/run/secrets/kubernetes.io/serviceaccount" },
            ],
          }],
        },
      },
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "crasher", namespace: ns },
        spec: {
          ...placement,
          containers: [{ name: "main", image: "busybox", command: ["sh", "-c", "exit 3"] }],
        },
      },
    ],
  };
}

Deno.test("vkubelet works with only the chart's roles for its node (ServiceAccount token)", async () => {
  const cluster = await useCluster();
  const id = crypto.randomUUID().slice(0, 6);
  const nodeName = `vk-rbac-${id}`;
  const account = `vkubelet-test-${id}`;
  const ns = await cluster.newNamespace("rbac");
  const dir = await Deno.makeTempDir({ prefix: "vk-rbac-" });
  const approved = new Set<string>();
  const cleanup = await bindTestRole(cluster, ns, account, nodeName);
  const token = (await cluster.kubectl(["-n", ns, "create", "token", account, "--duration=1h"]))
    .stdout.trim();
  assert.ok(token, "kubectl create token gave a token");
  const kubeconfig = await tokenKubeconfig(cluster, dir, token);
  await Deno.writeTextFile(`${dir}/process.yaml`, `stateDir: ${dir}/state\ncgroups: "off"\n`);
  const port = freePort();
  const username = `system:serviceaccount:${ns}:${account}`;
  // No --tls-cert-file: vkubelet files a kubelet-serving CSR, approved below as an admin would.
  const vk = await spawnVkubelet(cluster, nodeName, Deno.execPath(), [
    "run",
    "--no-prompt",
    ...VKUBELET_PERMISSIONS,
    mainPath,
    `--nodename=${nodeName}`,
    "--provider=process",
    `--provider-config=${dir}/process.yaml`,
    `--kubeconfig=${kubeconfig}`,
    "--node-ip=127.0.0.1",
    "--listen-address=127.0.0.1",
    `--port=${port}`,
    "--node-lease-renew-interval=1s",
    `--cert-dir=${dir}/pki`,
    "--cordon-on-shutdown",
  ], { whileWaiting: () => approveCsrsOf(cluster, username, approved) });
  let stopped = false;
  try {
    // The node is Ready before its serving certificate is signed; the kubelet API waits for it.
    await eventually("vkubelet's kubelet-serving CSR", async () => {
      await approveCsrsOf(cluster, username, approved);
      return approved.size > 0 ? true : undefined;
    });
    const lease = () =>
      cluster.kubectl([
        "-n",
        "kube-node-lease",
        "get",
        "lease",
        nodeName,
        "-o",
        "jsonpath={.spec.renewTime}",
      ]);
    const firstRenew = (await lease()).stdout;
    await eventually("the lease to be renewed", async () => {
      const now = (await lease()).stdout;
      return now && now !== firstRenew ? now : undefined;
    });

    const applied = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify(workload(ns, nodeName)),
    });
    assert.equal(applied.code, 0, applied.stderr);
    await podPhase(cluster, ns, "greeter", "Running");
    assert.match(await podLogs(cluster, ns, "greeter", "from-cm"), /from-cm from-secret token=yes/);

    const events = async (pod: string) => {
      const res = await cluster.kubectl([
        "-n",
        ns,
        "get",
        "events",
        "--field-selector",
        `involvedObject.name=${pod}`,
        "-o",
        "json",
      ]);
      return (JSON.parse(res.stdout).items as { reason: string; count?: number }[]);
    };
    assert.ok((await events("greeter")).some((e) => e.reason === "Started"));
    // A repeated event is patched (count + 1), not created again. The crasher restarts at once,
    // then after 10 s (the kubelet's back-off), and each restart records Created, Started and
    // BackOff again (core/pods/pod_status.ts `lifecycleEvents`), so a repeat is due within
    // about 10 s of its first crash however quickly the restarts go by; 60 s is the margin.
    await eventually("a repeated event of the crashing pod", async () => {
      const found = (await events("crasher")).find((e) => (e.count ?? 1) > 1);
      return found ? found : undefined;
    }, 60_000);

    // A bearer token is authenticated by TokenReview, then refused by SubjectAccessReview:
    // this account may not use nodes/proxy. 401 would mean the TokenReview itself failed.
    assert.equal(await kubeletStatus(port, "/pods", token), 403);

    const deleted = await cluster.kubectl(["-n", ns, "delete", "pod", "greeter", "--timeout=30s"]);
    assert.equal(deleted.code, 0, deleted.stderr);

    stopped = true;
    assert.equal(await vk.stop(), 0, vk.output());
    const unschedulable = await cluster.kubectl([
      "get",
      "node",
      nodeName,
      "-o",
      "jsonpath={.spec.unschedulable}",
    ]);
    assert.equal(unschedulable.stdout, "true", "cordoned on shutdown (patch nodes)");
    assert.doesNotMatch(vk.output(), /forbidden/i);
  } catch (err) {
    throw new Error(`${err}\nvkubelet's output:\n${vk.output()}`, { cause: err });
  } finally {
    if (!stopped) await vk.stop();
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    for (const args of cleanup) await cluster.kubectl(args);
    for (const name of approved) {
      await cluster.kubectl(["delete", "csr", name, "--ignore-not-found"]);
    }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
