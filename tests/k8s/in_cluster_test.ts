import assert from "node:assert/strict";
import { join } from "node:path";
import { loadInClusterConfig } from "../../k8s/config/in_cluster.ts";
import { loadKubeConfig } from "../../k8s/config/load.ts";
import { isKubeConfigError } from "../../k8s/errors.ts";
import { FakeClock } from "../fakes/clock.ts";
import { fakePem, tempDir } from "./_fixtures.ts";

const CA = fakePem("CERTIFICATE");

async function serviceAccountDir(dir: string, files: Record<string, string>): Promise<string> {
  const sa = join(dir, "serviceaccount");
  await Deno.mkdir(sa);
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(join(sa, name), text);
  return sa;
}

const podEnv = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };

Deno.test("in a pod, the service host, CA, token and namespace make the connection", async () => {
  await using dir = await tempDir();
  const sa = await serviceAccountDir(dir.path, { "ca.crt": CA, token: "t1\n", namespace: "vk" });
  const config = await loadInClusterConfig({ env: podEnv, serviceAccountDir: sa });
  assert.equal(config.server, "https://10.96.0.1:443");
  assert.deepEqual(config.caCerts, [CA]);
  assert.equal(config.namespace, "vk");
  assert.deepEqual(await config.credentialSource!.get(), { token: "t1" });
});

Deno.test("a rotated service-account token is picked up", async () => {
  await using dir = await tempDir();
  const sa = await serviceAccountDir(dir.path, { "ca.crt": CA, token: "before" });
  const clock = new FakeClock();
  const config = await loadInClusterConfig({ env: podEnv, serviceAccountDir: sa, clock });
  await Deno.writeTextFile(join(sa, "token"), "after");
  await clock.advance(60_000);
  assert.deepEqual(await config.credentialSource!.get(), { token: "after" });
  assert.equal(config.namespace, "default", "no namespace file means default");
});

Deno.test("an IPv6 service host is bracketed in the URL", async () => {
  await using dir = await tempDir();
  const sa = await serviceAccountDir(dir.path, { "ca.crt": CA, token: "t" });
  const env = { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443" };
  const config = await loadInClusterConfig({ env, serviceAccountDir: sa });
  assert.equal(config.server, "https://[fd00::1]:6443");
});

Deno.test("a pod without its service account mounted gets an error naming the file", async () => {
  await using dir = await tempDir();
  const sa = await serviceAccountDir(dir.path, { token: "t" });
  const err = await loadInClusterConfig({ env: podEnv, serviceAccountDir: sa }).catch((e) => e);
  assert.ok(isKubeConfigError(err));
  assert.ok(err.message.includes(join(sa, "ca.crt")), err.message);
  assert.match(err.message, /automountServiceAccountToken/);
  await Deno.remove(sa, { recursive: true });
  const noToken = await serviceAccountDir(dir.path, { "ca.crt": CA });
  const err2 = await loadInClusterConfig({ env: podEnv, serviceAccountDir: noToken })
    .catch((e) => e);
  assert.ok(err2.message.includes(join(noToken, "token")), err2.message);
});

Deno.test("without a kubeconfig, loadKubeConfig falls back to the pod's service account", async () => {
  await using dir = await tempDir();
  const sa = await serviceAccountDir(dir.path, { "ca.crt": CA, token: "t" });
  const config = await loadKubeConfig({
    env: { ...podEnv, HOME: dir.path },
    serviceAccountDir: sa,
  });
  assert.equal(config.source, "in-cluster service account");
  const err = await loadKubeConfig({
    env: { ...podEnv, HOME: dir.path },
    serviceAccountDir: sa,
    context: "x",
  })
    .catch((e) => e);
  assert.match(err.message, /context "x" was asked for but no kubeconfig file exists/);
});

Deno.test("outside a pod, in-cluster configuration says which variables are missing", async () => {
  const err = await loadInClusterConfig({ env: {} }).catch((e) => e);
  assert.match(err.message, /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT/);
});
