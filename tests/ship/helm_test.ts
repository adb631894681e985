/**
 * The chart deploy/helm/vkubelet with a real helm (v4, built from Go modules): `helm lint`, the
 * plain manifests in deploy/kubernetes/ are what it renders with its defaults (and ha/ with the
 * high-availability values), four value sets (defaults: node; ha; csr with the kubernetes
 * provider; bootstrap with a token) pass the API server's server-side dry run, value sets that
 * cannot work are refused naming the fix, and an install against the local control plane stores
 * the StatefulSet deploy/kubernetes/ describes.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { useCluster } from "../../tools/cluster/harness.ts";
import {
  chartDir,
  helm,
  MANIFEST_SETS,
  manifestsDir,
  plainManifests,
} from "../../tools/helm/manifests.ts";
import { type K8sObject, render, VALUE_SETS } from "./_chart.ts";

Deno.test("helm lint passes for each value set", async () => {
  for (const [name, set] of Object.entries(VALUE_SETS)) {
    const res = await helm(["lint", "--strict", chartDir, ...set]);
    assert.equal(res.code, 0, `${name}: ${res.stdout}${res.stderr}`);
    assert.match(res.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

Deno.test("deploy/kubernetes (and ha/) is what the chart renders with its defaults (and ha values)", async () => {
  const files: string[] = [];
  for (const folder of Object.keys(MANIFEST_SETS)) {
    for (const [file, text] of await plainManifests(folder)) {
      files.push(file);
      assert.equal(
        await Deno.readTextFile(`${manifestsDir}/${file}`),
        text,
        `deploy/kubernetes/${file} differs from the chart: run deno run -A tools/helm/manifests.ts`,
      );
    }
  }
  assert.deepEqual(files.sort(), [
    "bootstrap.yaml",
    "configmap.yaml",
    "ha/configmap.yaml",
    "ha/pdb.yaml",
    "ha/rbac.yaml",
    "ha/workload.yaml",
    "rbac.yaml",
    "workload.yaml",
  ]);
});

Deno.test("the chart refuses value sets that cannot work, naming the value and the fix", async () => {
  const cases: [string[], RegExp][] = [
    [["--set=leaderElect=true"], /mode node runs vkubelet as system:node.*set leaderElect: false/],
    [
      ["--set=certificates.mode=bootstrap", "--set=leaderElect=true"],
      /NodeRestriction.*set leaderElect: false/,
    ],
    [
      ["--set=certificates.mode=files", "--set=leaderElect=true", "--set=provider.name=process"],
      /refuses --leader-elect; set leaderElect: false/,
    ],
    [["--set=replicas=2"], /replicas > 1 needs leaderElect: true/],
    [["--set=certificates.mode=secret"], /certificates.mode "secret" is not one of node, files/],
    [
      [
        "--set=certificates.mode=bootstrap",
        "--set=leaderElect=false",
        "--set=replicas=1",
        "--set=bootstrap.token=short",
      ],
      /bootstrap.token must be <id>.<secret>/,
    ],
  ];
  for (const [set, message] of cases) {
    const res = await helm(["template", "vkubelet", chartDir, ...set]);
    assert.notEqual(res.code, 0, `${set.join(" ")} rendered`);
    assert.match(res.stderr, message);
  }
});

Deno.test("four value sets pass the API server's server-side dry run", async () => {
  const cluster = await useCluster();
  const ns = await cluster.newNamespace("helm");
  try {
    for (const [name, set] of Object.entries(VALUE_SETS)) {
      const { text, objects } = await render(`vk-${name}`, ns, set);
      const res = await cluster.kubectl(["apply", "--dry-run=server", "-f", "-"], { stdin: text });
      assert.equal(res.code, 0, `${name}: ${res.stderr}`);
      for (const o of objects) {
        const what = `${o.kind.toLowerCase()}(\\.[a-z0-9.]+)?/${o.metadata.name}`;
        assert.match(res.stdout, new RegExp(`^${what} created \\(server dry run\\)$`, "m"));
      }
    }
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
  }
});

/** Whether every field of `want` is in `got` with the same value (the API server adds defaults). */
function contains(got: unknown, want: unknown, path = ""): string | undefined {
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return `${path}: ${JSON.stringify(got)}`;
    for (let i = 0; i < want.length; i++) {
      const problem = contains(got[i], want[i], `${path}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (want && typeof want === "object") {
    if (!got || typeof got !== "object") return `${path}: ${JSON.stringify(got)}`;
    for (const [key, value] of Object.entries(want)) {
      const problem = contains((got as Record<string, unknown>)[key], value, `${path}.${key}`);
      if (problem) return problem;
    }
    return undefined;
  }
  return got === want ? undefined : `${path}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`;
}

Deno.test("helm install stores the StatefulSet of deploy/kubernetes (defaults)", async () => {
  const cluster = await useCluster();
  const ns = await cluster.newNamespace("helm");
  // Release "vkubelet", as deploy/kubernetes is rendered; only the namespace differs.
  const release = "vkubelet";
  const env = { KUBECONFIG: cluster.kubeconfigPath };
  try {
    const installed = await helm(["install", release, chartDir, "--namespace", ns], { env });
    assert.equal(installed.code, 0, installed.stderr);
    const status = await helm(["status", release, "--namespace", ns, "-o", "json"], { env });
    assert.equal(JSON.parse(status.stdout).info.status, "deployed");
    const plain = parseAllDocuments(await Deno.readTextFile(`${manifestsDir}/workload.yaml`))
      .map((d) => d.toJS() as K8sObject)[0];
    const live = JSON.parse(
      (await cluster.kubectl(["-n", ns, "get", "statefulset", release, "-o", "json"])).stdout,
    );
    // The config's checksum covers the rendered ConfigMap, namespace included.
    assert.match(live.spec.template.metadata.annotations["checksum/config"], /^[0-9a-f]{16}$/);
    delete plain.spec.template.metadata.annotations;
    assert.equal(contains(live.spec, plain.spec, "spec"), undefined);
    assert.equal(contains(live.metadata.labels, plain.metadata.labels, "labels"), undefined);
    assert.equal(live.metadata.labels["app.kubernetes.io/managed-by"], "Helm");
    const uninstalled = await helm(["uninstall", release, "--namespace", ns, "--wait"], { env });
    assert.equal(uninstalled.code, 0, uninstalled.stderr);
    const binding = await cluster.kubectl(["get", "clusterrolebinding", `${release}-bootstrap`]);
    assert.notEqual(binding.code, 0, "helm uninstall removed the ClusterRoleBinding");
  } finally {
    await helm(["uninstall", release, "--namespace", ns, "--ignore-not-found"], { env });
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
  }
});
