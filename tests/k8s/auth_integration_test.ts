/**
 * Authentication and authorisation as the real apiserver sees them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { KubeClient } from "../../k8s/client.ts";
import { ExecCredentialSource } from "../../k8s/config/exec_credential.ts";
import type { ConnectionConfig } from "../../k8s/config/types.ts";
import { isConnectionError, isForbidden, isUnauthorized } from "../../k8s/errors.ts";
import { adminClient, dropNamespace, type TestCluster, useCluster } from "./_cluster.ts";
import { tempDir } from "./_fixtures.ts";

interface SelfSubjectReview {
  status?: { userInfo?: { username?: string; groups?: string[] } };
}

/** Who the apiserver thinks the client is. */
async function whoAmI(kube: KubeClient): Promise<string | undefined> {
  const review = await kube.request<SelfSubjectReview>({
    method: "POST",
    path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  });
  return review.status?.userInfo?.username;
}

async function tokenConfig(cluster: TestCluster, token: string): Promise<ConnectionConfig> {
  return {
    server: cluster.server,
    caCerts: [await Deno.readTextFile(join(cluster.pkiDir, "ca.crt"))],
    credentials: { token },
    namespace: "default",
    source: "test",
  };
}

Deno.test("the admin kubeconfig authenticates with its client certificate", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  assert.match(kube.config.source, /kubeconfig/);
  assert.ok(kube.config.credentials?.clientCertificate, "the admin kubeconfig holds a certificate");
  assert.equal(kube.config.credentials?.token, undefined);
  const name = await whoAmI(kube);
  assert.ok(name && name !== "system:anonymous", `authenticated as ${name}`);
});

Deno.test("a service-account token from createToken authenticates as that account", async () => {
  const cluster = await useCluster();
  using admin = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-token");
  try {
    const issued = await admin.serviceAccounts.createToken(ns, "default", {
      spec: { audiences: [] },
    });
    using kube = new KubeClient(await tokenConfig(cluster, issued.status!.token));
    assert.equal(await whoAmI(kube), `system:serviceaccount:${ns}:default`);
    const denied = await kube.pods.list({ namespace: ns }).catch((e) => e);
    assert.ok(isForbidden(denied), "authenticated, but no role grants it pods");
  } finally {
    await dropNamespace(cluster, ns);
  }
});

Deno.test("an exec plugin's token is used against the apiserver", async () => {
  const cluster = await useCluster();
  using admin = await adminClient(cluster);
  await using dir = await tempDir();
  const ns = await cluster.newNamespace("k8s-exec");
  try {
    const issued = await admin.serviceAccounts.createToken(ns, "default", {
      spec: { audiences: [] },
    });
    const plugin = join(dir.path, "plugin.sh");
    const credential = JSON.stringify({
      apiVersion: "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      status: { token: issued.status!.token },
    });
    await Deno.writeTextFile(plugin, `#!/bin/sh\ncat <<'JSON'\n${credential}\nJSON\n`);
    await Deno.chmod(plugin, 0o755);
    const config = await tokenConfig(cluster, "");
    config.credentials = undefined;
    config.credentialSource = new ExecCredentialSource({
      apiVersion: "client.authentication.k8s.io/v1",
      command: plugin,
    });
    using kube = new KubeClient(config);
    assert.equal(await whoAmI(kube), `system:serviceaccount:${ns}:default`);
  } finally {
    await dropNamespace(cluster, ns);
  }
});

Deno.test("an exec plugin's client certificate is presented in the TLS handshake", async () => {
  const cluster = await useCluster();
  await using dir = await tempDir();
  const { certFile, keyFile } = await cluster.issueClientCert("vk-exec-user", ["vk-testers"]);
  const plugin = join(dir.path, "plugin.sh");
  const credential = JSON.stringify({
    apiVersion: "client.authentication.k8s.io/v1",
    kind: "ExecCredential",
    status: {
      clientCertificateData: await Deno.readTextFile(certFile),
      clientKeyData: await Deno.readTextFile(keyFile),
    },
  });
  await Deno.writeTextFile(plugin, `#!/bin/sh\ncat <<'JSON'\n${credential}\nJSON\n`);
  await Deno.chmod(plugin, 0o755);
  const config = await tokenConfig(cluster, "");
  config.credentials = undefined;
  config.credentialSource = new ExecCredentialSource({
    apiVersion: "client.authentication.k8s.io/v1",
    command: plugin,
  });
  using kube = new KubeClient(config);
  assert.equal(await whoAmI(kube), "vk-exec-user");
});

Deno.test("a certificate for a user no role grants gets isForbidden", async () => {
  const cluster = await useCluster();
  const kubeconfig = await cluster.userKubeconfig("vk-nobody", ["vk-nobodies"]);
  using kube = await KubeClient.fromConfig({ kubeconfig, env: {} });
  const err = await kube.pods.list({ namespace: "default" }).catch((e) => e);
  assert.ok(isForbidden(err), String(err));
  assert.match(err.message, /User "vk-nobody" cannot list resource "pods"/);
});

Deno.test("a wrong token gets isUnauthorized, an unknown CA a connection error", async () => {
  const cluster = await useCluster();
  using bad = new KubeClient(await tokenConfig(cluster, "wrong"));
  assert.ok(isUnauthorized(await bad.pods.list().catch((e) => e)));
  using untrusted = new KubeClient(
    { ...(await tokenConfig(cluster, "x")), caCerts: undefined },
    { retry: { maxRetries: 0 } },
  );
  const err = await untrusted.pods.list().catch((e) => e);
  assert.ok(isConnectionError(err), String(err));
  assert.match(err.message, /check the cluster CA/);
});
