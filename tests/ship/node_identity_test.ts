/**
 * The chart's default mode, node (issue 51 item 6): its ServiceAccount may file and read CSRs and
 * nothing else (not Secrets, tokens, pod status or deletes, which the old default's could), and
 * vkubelet bootstrapped with its token through the chart's own bootstrap kubeconfig runs as
 * `system:node:<name>` once an admin approves the first CSR.
 *
 * The chart's bootstrap mode (issue 43 item 4) on the local control plane: vkubelet runs as
 * `system:node:<name>` and the chart binds that identity to nothing, so the Node authorizer and
 * NodeRestriction alone scope it — it reads the Secret its node's pod uses and no other, mints a
 * token for its pod's ServiceAccount and no other, renews its node's Lease but may write no other
 * Lease (hence no `--leader-elect` in this mode). The bootstrap token's group gets its node client
 * certificate approved by the controller manager through the chart's binding.
 */
import assert from "node:assert/strict";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { createCsr, generateKeyPair } from "../../x509/mod.ts";
import { render, VALUE_SETS } from "./_chart.ts";
import { eventually } from "../../tools/harness/wait.ts";
import { freePort } from "../../tools/cluster/ports.ts";
import { VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";
import { greeterPod, podPhase, type SpawnedVkubelet, spawnVkubelet } from "./_helpers.ts";

const mainPath = new URL("../../main.ts", import.meta.url).pathname;

/** kubectl with another kubeconfig than the admin's. */
async function kubectlAs(cluster: TestCluster, kubeconfig: string, args: string[]) {
  const out = await new Deno.Command(cluster.binary, {
    args: ["kubectl", `--kubeconfig=${kubeconfig}`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

function workload(ns: string, nodeName: string) {
  const secret = (name: string) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: ns },
    stringData: { v: name },
  });
  const account = (name: string) => ({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name, namespace: ns },
  });
  return {
    apiVersion: "v1",
    kind: "List",
    items: [
      secret("used"),
      secret("unused"),
      account("mine"),
      account("other"),
      {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "p", namespace: ns },
        spec: {
          nodeName,
          serviceAccountName: "mine",
          containers: [{
            name: "main",
            image: "busybox",
            env: [{ name: "V", valueFrom: { secretKeyRef: { name: "used", key: "v" } } }],
          }],
        },
      },
    ],
  };
}

Deno.test("as its node, vkubelet reads only its pods' Secrets and tokens, and no other Lease", async () => {
  const cluster = await useCluster();
  const id = crypto.randomUUID().slice(0, 6);
  const nodeName = `vk-node-${id}`;
  const release = `vk-node-${id}`;
  const ns = await cluster.newNamespace("node");
  const set = [
    ...VALUE_SETS.bootstrap.filter((s) => !s.startsWith("--set=nodeName")),
    `--set=nodeName=${nodeName}`,
    `--set=bootstrap.token=${id}.${id}0123456789`,
  ];
  const { text, objects } = await render(release, ns, set);
  // Bound to the node identity: nothing. The ServiceAccount has no token and no role.
  assert.deepEqual(objects.filter((o) => o.kind === "ClusterRole" || o.kind === "Role"), []);
  const bindings = objects.filter((o) => o.kind === "ClusterRoleBinding");
  assert.deepEqual(bindings.map((b) => [b.roleRef.name, b.subjects[0].name]).sort(), [
    [
      "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
      "system:bootstrappers:vkubelet",
    ],
    [
      "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
      `system:node:${nodeName}`,
    ],
    ["system:node-bootstrapper", "system:bootstrappers:vkubelet"],
  ]);
  const created: string[] = [];
  try {
    const applied = await cluster.kubectl(["apply", "-f", "-"], { stdin: text });
    assert.equal(applied.code, 0, applied.stderr);
    created.push(...bindings.map((b) => b.metadata.name));
    const work = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify(workload(ns, nodeName)),
    });
    assert.equal(work.code, 0, work.stderr);
    const node = await cluster.nodeKubeconfig(nodeName);
    const as = (args: string[]) => kubectlAs(cluster, node, args);

    // The Node authorizer learns the pod's references from its informers: wait for them.
    await eventually("the node to read its pod's Secret", async () => {
      const res = await as(["-n", ns, "get", "secret", "used", "-o", "name"]);
      return res.code === 0 ? true : undefined;
    });
    const unused = await as(["-n", ns, "get", "secret", "unused"]);
    assert.match(unused.stderr, /forbidden/i, "a Secret no pod of the node uses");
    const listed = await as(["-n", ns, "get", "secrets"]);
    assert.match(listed.stderr, /forbidden/i, "listing all Secrets");

    const uid =
      (await cluster.kubectl(["-n", ns, "get", "pod", "p", "-o", "jsonpath={.metadata.uid}"]))
        .stdout;
    const token = (account: string) =>
      as([
        "-n",
        ns,
        "create",
        "token",
        account,
        "--bound-object-kind=Pod",
        "--bound-object-name=p",
        `--bound-object-uid=${uid}`,
      ]);
    const mine = await token("mine");
    assert.equal(mine.code, 0, mine.stderr);
    assert.match(mine.stdout, /^ey/, "a token for its pod's ServiceAccount");
    const other = await token("other");
    assert.match(other.stderr, /forbidden/i, "a token for an unrelated ServiceAccount");

    // NodeRestriction: its node's Lease, and no other — not the leader election Lease.
    const lease = (name: string) =>
      JSON.stringify({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name, namespace: "kube-node-lease" },
        spec: { holderIdentity: nodeName, leaseDurationSeconds: 40 },
      });
    const ownLease = await createAs(cluster, node, lease(nodeName));
    assert.equal(ownLease.code, 0, ownLease.stderr);
    const electionLease = await createAs(cluster, node, lease(`vkubelet-${nodeName}`));
    assert.match(electionLease.stderr, /can only access node lease with the same name/);
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    for (const name of created) await cluster.kubectl(["delete", "clusterrolebinding", name]);
    await cluster.kubectl(["-n", "kube-system", "delete", "secret", `bootstrap-token-${id}`]);
    await cluster.kubectl(["-n", "kube-node-lease", "delete", "lease", nodeName]);
  }
});

/** `kubectl create -f -` of `json` as the given kubeconfig. */
async function createAs(cluster: TestCluster, kubeconfig: string, json: string) {
  const child = new Deno.Command(cluster.binary, {
    args: ["kubectl", `--kubeconfig=${kubeconfig}`, "create", "-f", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(json));
  await writer.close();
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

Deno.test("the bootstrap token's group gets its node client certificate approved and signed", async () => {
  const cluster = await useCluster();
  const id = crypto.randomUUID().slice(0, 6);
  const nodeName = `vk-boot-${id}`;
  const release = `vk-boot-${id}`;
  const ns = await cluster.newNamespace("boot");
  const set = [
    ...VALUE_SETS.bootstrap.filter((s) => !s.startsWith("--set=nodeName")),
    `--set=nodeName=${nodeName}`,
    `--set=bootstrap.token=${id}.${id}0123456789`,
  ];
  const { text, objects } = await render(release, ns, set);
  const bindings = objects.filter((o) => o.kind === "ClusterRoleBinding");
  const csrName = `vk-boot-${id}`;
  try {
    const applied = await cluster.kubectl(["apply", "-f", "-"], { stdin: text });
    assert.equal(applied.code, 0, applied.stderr);
    const request = await createCsr(await generateKeyPair(), {
      commonName: `system:node:${nodeName}`,
      organizations: ["system:nodes"],
    });
    const csr = {
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name: csrName },
      spec: {
        request: btoa(request),
        signerName: "kubernetes.io/kube-apiserver-client-kubelet",
        usages: ["digital signature", "client auth"],
      },
    };
    // As the API server authenticates a bootstrap token (system:bootstrap:<id> and its groups).
    const filed = await cluster.kubectl([
      "create",
      "-f",
      "-",
      `--as=system:bootstrap:${id}`,
      "--as-group=system:bootstrappers",
      "--as-group=system:bootstrappers:vkubelet",
      "--as-group=system:authenticated",
    ], { stdin: JSON.stringify(csr) });
    assert.equal(filed.code, 0, filed.stderr);
    const secrets = await cluster.kubectl([
      "-n",
      ns,
      "get",
      "secrets",
      `--as=system:bootstrap:${id}`,
      "--as-group=system:bootstrappers",
      "--as-group=system:bootstrappers:vkubelet",
    ]);
    assert.match(secrets.stderr, /forbidden/i, "a bootstrap token reads no Secret");
    const issued = await eventually("the CSR to be approved and signed", async () => {
      const res = await cluster.kubectl(["get", "csr", csrName, "-o", "json"]);
      const status = JSON.parse(res.stdout).status ?? {};
      return status.certificate ? status : undefined;
    });
    assert.ok(
      issued.conditions.some((c: { type: string; reason: string }) =>
        c.type === "Approved" && c.reason === "AutoApproved"
      ),
    );
  } finally {
    await cluster.kubectl(["delete", "csr", csrName, "--ignore-not-found"]);
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    for (const b of bindings) {
      await cluster.kubectl(["delete", "clusterrolebinding", b.metadata.name]);
    }
    await cluster.kubectl(["-n", "kube-system", "delete", "secret", `bootstrap-token-${id}`]);
  }
});

Deno.test("by default the ServiceAccount files the node's CSR and may do nothing else", async () => {
  const cluster = await useCluster();
  const id = crypto.randomUUID().slice(0, 6);
  const nodeName = `vk-sa-${id}`;
  const release = `vk-sa-${id}`;
  const ns = await cluster.newNamespace("sa");
  const { text, objects } = await render(release, ns, [`--set=nodeName=${nodeName}`]);
  const bindings = objects.filter((o) => o.kind === "ClusterRoleBinding");
  const account = objects.find((o) => o.kind === "ServiceAccount")!.metadata.name;
  const as = [`--as=system:serviceaccount:${ns}:${account}`];
  const csrName = `vk-sa-${id}`;
  try {
    const applied = await cluster.kubectl(["apply", "-f", "-"], { stdin: text });
    assert.equal(applied.code, 0, applied.stderr);
    const secret = await cluster.kubectl(["-n", ns, "create", "secret", "generic", "s"]);
    assert.equal(secret.code, 0, secret.stderr);
    // What the files mode's ServiceAccount could do, and this one may not.
    for (
      const check of [
        ["get", "secrets", "-A"],
        ["create", "serviceaccounts", "--subresource=token", "-n", ns],
        ["update", "pods", "--subresource=status", "-A"],
        ["delete", "pods", "-A"],
        ["create", "leases", "-n", "kube-node-lease"],
        // The approver's question: no auto-approval of a first certificate for any node name.
        ["create", "certificatesigningrequests", "--subresource=nodeclient"],
      ]
    ) {
      const res = await cluster.kubectl(["auth", "can-i", ...check, ...as]);
      assert.equal(res.stdout.trim(), "no", `can-i ${check.join(" ")}: ${res.stdout}`);
    }
    const request = await createCsr(await generateKeyPair(), {
      commonName: `system:node:${nodeName}`,
      organizations: ["system:nodes"],
    });
    const filed = await cluster.kubectl(["create", "-f", "-", ...as], {
      stdin: JSON.stringify({
        apiVersion: "certificates.k8s.io/v1",
        kind: "CertificateSigningRequest",
        metadata: { name: csrName },
        spec: {
          request: btoa(request),
          signerName: "kubernetes.io/kube-apiserver-client-kubelet",
          usages: ["digital signature", "client auth"],
        },
      }),
    });
    assert.equal(filed.code, 0, filed.stderr);
    const read = await cluster.kubectl(["get", "csr", csrName, "-o", "name", ...as]);
    assert.equal(read.code, 0, read.stderr);
    // An admin approves it (bootstrap.autoApprove is off); the controller manager signs it.
    const approved = await cluster.kubectl(["certificate", "approve", csrName]);
    assert.equal(approved.code, 0, approved.stderr);
    await eventually("the CSR to be signed", async () => {
      const res = await cluster.kubectl(["get", "csr", csrName, "-o", "json"]);
      return JSON.parse(res.stdout).status?.certificate ? true : undefined;
    });
  } finally {
    await cluster.kubectl(["delete", "csr", csrName, "--ignore-not-found"]);
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    for (const b of bindings) {
      await cluster.kubectl(["delete", "clusterrolebinding", b.metadata.name]);
    }
  }
});

/** Approves pending CSRs filed by one of `usernames`, as an admin would; the names approved. */
async function approveCsrsOf(cluster: TestCluster, usernames: string[], approved: Set<string>) {
  const res = await cluster.kubectl(["get", "csr", "-o", "json"]);
  // deno-lint-ignore no-explicit-any
  for (const csr of JSON.parse(res.stdout).items as any[]) {
    if (!usernames.includes(csr.spec.username) || csr.status?.conditions) continue;
    const out = await cluster.kubectl(["certificate", "approve", csr.metadata.name]);
    if (out.code === 0) approved.add(csr.metadata.name);
  }
}

Deno.test("the default runs vkubelet as its node once an admin approves its first CSR", async () => {
  const cluster = await useCluster();
  const id = crypto.randomUUID().slice(0, 6);
  const nodeName = `vk-def-${id}`;
  const release = `vk-def-${id}`;
  const ns = await cluster.newNamespace("def");
  const { text, objects } = await render(release, ns, [`--set=nodeName=${nodeName}`]);
  const bindings = objects.filter((o) => o.kind === "ClusterRoleBinding");
  const account = objects.find((o) => o.kind === "ServiceAccount")!.metadata.name;
  const dir = await Deno.makeTempDir({ prefix: "vk-def-" });
  const approved = new Set<string>();
  let vk: SpawnedVkubelet | undefined;
  try {
    const applied = await cluster.kubectl(["apply", "-f", "-"], { stdin: text });
    assert.equal(applied.code, 0, applied.stderr);
    // The pod's projected token and CA, where the chart's bootstrap kubeconfig names them.
    const token = await cluster.kubectl(["-n", ns, "create", "token", account, "--duration=1h"]);
    await Deno.writeTextFile(`${dir}/token`, token.stdout.trim());
    await Deno.copyFile(`${cluster.pkiDir}/ca.crt`, `${dir}/ca.crt`);
    const bootstrap = objects.find((o) => o.kind === "ConfigMap" && o.data?.kubeconfig)!;
    await Deno.writeTextFile(
      `${dir}/bootstrap.kubeconfig`,
      (bootstrap.data.kubeconfig as string)
        .replaceAll("/etc/vkubelet/bootstrap-credential", dir)
        .replace("https://kubernetes.default.svc", cluster.server),
    );
    const users = [`system:serviceaccount:${ns}:${account}`, `system:node:${nodeName}`];
    vk = await spawnVkubelet(cluster, nodeName, Deno.execPath(), [
      "run",
      "--no-prompt",
      ...VKUBELET_PERMISSIONS,
      mainPath,
      `--nodename=${nodeName}`,
      "--provider=mock",
      `--bootstrap-kubeconfig=${dir}/bootstrap.kubeconfig`,
      "--rotate-server-certificates",
      `--cert-dir=${dir}/pki`,
      "--node-ip=127.0.0.1",
      "--listen-address=127.0.0.1",
      `--port=${freePort()}`,
    ], { whileWaiting: () => approveCsrsOf(cluster, users, approved), timeoutMs: 120_000 });
    const whoami = await new Deno.Command(cluster.binary, {
      args: ["kubectl", `--kubeconfig=${dir}/pki/${nodeName}.kubeconfig`, "auth", "whoami"],
      stdout: "piped",
    }).output();
    assert.match(new TextDecoder().decode(whoami.stdout), new RegExp(`system:node:${nodeName}`));
    const pod = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify(greeterPod(ns, nodeName, "hello")),
    });
    assert.equal(pod.code, 0, pod.stderr);
    await podPhase(cluster, ns, "greeter", "Running");
    assert.doesNotMatch(vk.output(), /forbidden/i);
  } catch (err) {
    throw new Error(`${err}\nvkubelet's output:\n${vk?.output()}`, { cause: err });
  } finally {
    await vk?.stop();
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await cluster.kubectl(["-n", "kube-node-lease", "delete", "lease", nodeName]);
    for (const b of bindings) {
      await cluster.kubectl(["delete", "clusterrolebinding", b.metadata.name]);
    }
    for (const name of approved) await cluster.kubectl(["delete", "csr", name]);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
