import assert from "node:assert/strict";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("the apiserver is ready and the admin may create pods", async () => {
  const cluster = await useCluster();
  const readyz = await cluster.kubectl(["get", "--raw", "/readyz"]);
  assert.equal(readyz.stdout.trim(), "ok");
  const canI = await cluster.kubectl(["auth", "can-i", "create", "pods"]);
  assert.equal(canI.stdout.trim(), "yes");
});

Deno.test("RBAC refuses a user the cluster CA knows but no role grants", async () => {
  const cluster = await useCluster();
  const { certFile, keyFile } = await cluster.issueClientCert("nobody", ["nobodies"]);
  const res = await cluster.kubectl([
    `--client-certificate=${certFile}`,
    `--client-key=${keyFile}`,
    "--user=",
    "get",
    "pods",
    "-n",
    "default",
  ]);
  assert.notEqual(res.code, 0);
  assert.match(res.stderr, /forbidden: User "nobody" cannot list resource "pods"/);
});

Deno.test("a Deployment gets a ReplicaSet and Pods that stay Pending without a node for them", async () => {
  const cluster = await useCluster();
  const ns = await cluster.newNamespace("deploy");
  // Other tests may have nodes in this cluster: select none of them.
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: ns },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          nodeSelector: { "example.com/no-such-node": "true" },
          containers: [{ name: "web", image: "registry.invalid/pause:1" }],
        },
      },
    },
  };
  const created = await cluster.kubectl(["apply", "-f", "-"], {
    stdin: JSON.stringify(deployment),
  });
  assert.equal(created.code, 0, created.stderr);
  // The deployment controller makes the ReplicaSet, the replicaset controller the pods, and the
  // scheduler marks them unschedulable: every controller this proves is running.
  const pods = await eventually("two unschedulable pods", async () => {
    const res = await cluster.kubectl(["-n", ns, "get", "pods", "-o", "json"]);
    const items = JSON.parse(res.stdout).items as {
      metadata: { ownerReferences?: { kind: string }[] };
      status: { phase: string; conditions?: { type: string; status: string; reason: string }[] };
    }[];
    const unschedulable = items.filter((p) =>
      p.status.conditions?.some((c) =>
        c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable"
      )
    );
    return unschedulable.length === 2 ? items : undefined;
  });
  for (const pod of pods) {
    assert.equal(pod.status.phase, "Pending");
    assert.equal(pod.metadata.ownerReferences?.[0]?.kind, "ReplicaSet");
  }
  const rs = await cluster.kubectl(["-n", ns, "get", "replicasets", "-o", "name"]);
  assert.match(rs.stdout, /^replicaset\.apps\/web-/);
  await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
});

Deno.test("a service account token can be requested for a pod's identity", async () => {
  const cluster = await useCluster();
  const ns = await cluster.newNamespace("token");
  const res = await cluster.kubectl(["-n", ns, "create", "token", "default", "--duration=10m"]);
  assert.equal(res.code, 0, res.stderr);
  const [, payload] = res.stdout.trim().split(".");
  const claims = JSON.parse(atob(payload.replaceAll("-", "+").replaceAll("_", "/")));
  assert.equal(claims.sub, `system:serviceaccount:${ns}:default`);
  assert.equal(claims.iss, "https://kubernetes.default.svc.cluster.local");
  assert.ok(claims.exp - claims.iat <= 600 && claims.exp - claims.iat > 500);
  // The apiserver accepts the token it issued.
  const who = await cluster.kubectl([
    "--kubeconfig=/dev/null",
    `--server=${cluster.server}`,
    `--certificate-authority=${cluster.pkiDir}/ca.crt`,
    `--token=${res.stdout.trim()}`,
    "auth",
    "whoami",
    "-o",
    "jsonpath={.status.userInfo.username}",
  ]);
  assert.equal(who.stdout, `system:serviceaccount:${ns}:default`);
  await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
});

Deno.test("the root CA is published into every namespace for projected tokens", async () => {
  const cluster = await useCluster();
  const ns = await cluster.newNamespace("rootca");
  const ca = await eventually("kube-root-ca.crt", async () => {
    const res = await cluster.kubectl([
      "-n",
      ns,
      "get",
      "configmap",
      "kube-root-ca.crt",
      "-o",
      "jsonpath={.data.ca\\.crt}",
    ]);
    return res.code === 0 && res.stdout ? res.stdout : undefined;
  });
  assert.equal(ca.trim(), (await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`)).trim());
  await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
});
