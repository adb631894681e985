import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { isKubeConfigError, KubeConfigError } from "../../k8s/errors.ts";
import { loadKubeConfig } from "../../k8s/config/load.ts";
import { TokenFileSource } from "../../k8s/config/token_file.ts";
import { FakeClock } from "../fakes/clock.ts";
import { b64, fakePem, tempDir } from "./_fixtures.ts";

const CA = fakePem("CERTIFICATE", "Y2E=");
const CERT = fakePem("CERTIFICATE", "Y2VydA==");
const KEY = fakePem("PRIVATE KEY", "a2V5");

interface Entries {
  clusters?: Record<string, Record<string, unknown>>;
  users?: Record<string, Record<string, unknown>>;
  contexts?: Record<string, Record<string, unknown>>;
  current?: string;
}

/** Writes a kubeconfig made of named entries and returns its path. */
async function writeKubeconfig(dir: string, file: string, entries: Entries): Promise<string> {
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    "current-context": entries.current,
    clusters: Object.entries(entries.clusters ?? {}).map(([name, cluster]) => ({ name, cluster })),
    users: Object.entries(entries.users ?? {}).map(([name, user]) => ({ name, user })),
    contexts: Object.entries(entries.contexts ?? {}).map(([name, context]) => ({ name, context })),
  };
  const path = join(dir, file);
  await Deno.writeTextFile(path, stringify(doc));
  return path;
}

async function rejectsWith(promise: Promise<unknown>, ...fragments: string[]): Promise<void> {
  const err = await promise.then(() => undefined, (e) => e);
  assert.ok(isKubeConfigError(err), `expected a KubeConfigError, got ${err}`);
  for (const fragment of fragments) {
    assert.ok(
      (err as KubeConfigError).message.includes(fragment),
      `message ${JSON.stringify((err as Error).message)} lacks ${JSON.stringify(fragment)}`,
    );
  }
}

Deno.test("the current context's cluster, user and namespace are used", async () => {
  await using dir = await tempDir();
  const path = await writeKubeconfig(dir.path, "config", {
    current: "dev",
    clusters: { c: { server: "https://10.0.0.1:6443", "certificate-authority-data": b64(CA) } },
    users: { u: { "client-certificate-data": b64(CERT), "client-key-data": b64(KEY) } },
    contexts: { dev: { cluster: "c", user: "u", namespace: "team-a" } },
  });
  const config = await loadKubeConfig({ kubeconfig: path, env: {} });
  assert.equal(config.server, "https://10.0.0.1:6443");
  assert.deepEqual(config.caCerts, [CA]);
  assert.deepEqual(config.credentials?.clientCertificate, { cert: CERT, key: KEY });
  assert.equal(config.namespace, "team-a");
  assert.match(config.source, /context "dev"/);
});

Deno.test("relative certificate paths are read from the kubeconfig's folder", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(join(dir.path, "pki"));
  await Deno.writeTextFile(join(dir.path, "pki", "ca.crt"), CA);
  await Deno.writeTextFile(join(dir.path, "pki", "admin.crt"), CERT);
  await Deno.writeTextFile(join(dir.path, "pki", "admin.key"), KEY);
  const path = await writeKubeconfig(dir.path, "admin.conf", {
    current: "x",
    clusters: { c: { server: "https://h:6443", "certificate-authority": "pki/ca.crt" } },
    users: { u: { "client-certificate": "pki/admin.crt", "client-key": "./pki/admin.key" } },
    contexts: { x: { cluster: "c", user: "u" } },
  });
  const config = await loadKubeConfig({ kubeconfig: path, env: { HOME: "/nonexistent" } });
  assert.deepEqual(config.caCerts, [CA]);
  assert.deepEqual(config.credentials?.clientCertificate, { cert: CERT, key: KEY });
  assert.equal(config.namespace, "default");
});

Deno.test("KUBECONFIG files are merged: the first to define a name or current-context wins", async () => {
  await using dir = await tempDir();
  const first = await writeKubeconfig(dir.path, "a", {
    clusters: { shared: { server: "https://first:1" } },
    users: { me: { token: "first-token" } },
    contexts: { ctx: { cluster: "shared", user: "me" } },
  });
  const second = await writeKubeconfig(dir.path, "b", {
    current: "ctx",
    clusters: { shared: { server: "https://second:2" }, other: { server: "https://other:3" } },
    users: { me: { token: "second-token" } },
    contexts: { ctx: { cluster: "other", user: "me" }, alt: { cluster: "other", user: "me" } },
  });
  const missing = join(dir.path, "does-not-exist");
  const env = { KUBECONFIG: [missing, first, second].join(":") };
  const config = await loadKubeConfig({ env });
  assert.equal(config.server, "https://first:1", "first file's context and cluster win");
  assert.equal(config.credentials?.token, "first-token");
  const alt = await loadKubeConfig({ env, context: "alt" });
  assert.equal(alt.server, "https://other:3", "entries only the second file has still count");
});

Deno.test("~/.kube/config is read when neither --kubeconfig nor KUBECONFIG is given", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(join(dir.path, ".kube"));
  await writeKubeconfig(join(dir.path, ".kube"), "config", {
    current: "home",
    clusters: { c: { server: "h.example:6443" } },
    users: { u: { token: "t" } },
    contexts: { home: { cluster: "c", user: "u" } },
  });
  const config = await loadKubeConfig({ env: { HOME: dir.path } });
  assert.equal(config.server, "https://h.example:6443", "a bare host:port gets https://");
});

Deno.test("an unknown context is refused, listing the contexts that exist", async () => {
  await using dir = await tempDir();
  const path = await writeKubeconfig(dir.path, "config", {
    clusters: { c: { server: "https://h:1" } },
    contexts: { one: { cluster: "c" }, two: { cluster: "c" } },
  });
  await rejectsWith(loadKubeConfig({ kubeconfig: path, context: "three" }), "three", "one, two");
  await rejectsWith(loadKubeConfig({ kubeconfig: path }), "no current-context");
});

Deno.test("broken base64 names the file and the field", async () => {
  await using dir = await tempDir();
  const path = await writeKubeconfig(dir.path, "config", {
    users: { u: { "client-certificate-data": b64(CERT), "client-key-data": "not base64!!" } },
  });
  await rejectsWith(
    loadKubeConfig({ kubeconfig: path }),
    `kubeconfig ${path}: users[0].user.client-key-data is not valid base64`,
  );
});

Deno.test("data that is not PEM, and a certificate without its key, are refused", async () => {
  await using dir = await tempDir();
  const notPem = await writeKubeconfig(dir.path, "a", {
    clusters: { c: { server: "https://h:1", "certificate-authority-data": b64("hello") } },
  });
  await rejectsWith(loadKubeConfig({ kubeconfig: notPem }), "clusters[0].cluster", "PEM");
  const noKey = await writeKubeconfig(dir.path, "b", {
    current: "x",
    clusters: { c: { server: "https://h:1" } },
    users: { u: { "client-certificate-data": b64(CERT) } },
    contexts: { x: { cluster: "c", user: "u" } },
  });
  await rejectsWith(loadKubeConfig({ kubeconfig: noKey }), "users[0].user.client-key", "key");
  const both = await writeKubeconfig(dir.path, "c", {
    current: "x",
    clusters: { c: { server: "https://h:1", "certificate-authority": "ca.crt" } },
    contexts: { x: { cluster: "c" } },
  });
  await Deno.writeTextFile(join(dir.path, "ca.crt"), CA);
  const text = (await Deno.readTextFile(both)).replace(
    "certificate-authority: ca.crt",
    `certificate-authority: ca.crt\n      certificate-authority-data: ${b64(CA)}`,
  );
  await Deno.writeTextFile(both, text);
  await rejectsWith(loadKubeConfig({ kubeconfig: both }), "keep only one");
});

Deno.test("a missing --kubeconfig file, bad YAML and auth-provider each get a clear error", async () => {
  await using dir = await tempDir();
  const missing = join(dir.path, "nope");
  await rejectsWith(loadKubeConfig({ kubeconfig: missing }), missing, "--kubeconfig");
  const bad = join(dir.path, "bad");
  await Deno.writeTextFile(bad, "clusters: [\n  - name: x\n   cluster: {");
  await rejectsWith(loadKubeConfig({ kubeconfig: bad }), bad, "not valid YAML");
  const gcp = await writeKubeconfig(dir.path, "gcp", {
    users: { u: { "auth-provider": { name: "gcp" } } },
  });
  await rejectsWith(loadKubeConfig({ kubeconfig: gcp }), "auth-provider", "exec");
});

Deno.test("with no kubeconfig and no pod environment the error says what to do", async () => {
  await using dir = await tempDir();
  await rejectsWith(loadKubeConfig({ env: { HOME: dir.path } }), "--kubeconfig", "KUBECONFIG");
});

Deno.test("a token file wins over an inline token and is re-read after rotation", async () => {
  await using dir = await tempDir();
  const tokenPath = join(dir.path, "token");
  await Deno.writeTextFile(tokenPath, "first\n");
  const path = await writeKubeconfig(dir.path, "config", {
    current: "x",
    clusters: { c: { server: "https://h:1" } },
    users: { u: { token: "inline", tokenFile: "token" } },
    contexts: { x: { cluster: "c", user: "u" } },
  });
  const clock = new FakeClock();
  const config = await loadKubeConfig({ kubeconfig: path, clock });
  assert.equal(config.credentials, undefined);
  assert.deepEqual(await config.credentialSource!.get(), { token: "first" });
  await Deno.writeTextFile(tokenPath, "second");
  assert.deepEqual(await config.credentialSource!.get(), { token: "first" }, "cached for a while");
  await clock.advance(61_000);
  assert.deepEqual(await config.credentialSource!.get(), { token: "second" });
});

Deno.test("a token file that vanishes keeps the last token; one never read is an error", async () => {
  await using dir = await tempDir();
  const tokenPath = join(dir.path, "token");
  await Deno.writeTextFile(tokenPath, "kept");
  const source = new TokenFileSource(tokenPath);
  assert.deepEqual(await source.get(), { token: "kept" });
  await Deno.remove(tokenPath);
  source.invalidate();
  assert.deepEqual(await source.get(), { token: "kept" });
  const never = new TokenFileSource(join(dir.path, "absent"), { field: "users[0].user.tokenFile" });
  await rejectsWith(never.get(), "absent", "users[0].user.tokenFile");
});

Deno.test("username and password become basic credentials", async () => {
  await using dir = await tempDir();
  const path = await writeKubeconfig(dir.path, "config", {
    current: "x",
    clusters: { c: { server: "https://h:1/prefix/" } },
    users: { u: { username: "admin", password: "secret" } },
    contexts: { x: { cluster: "c", user: "u" } },
  });
  const config = await loadKubeConfig({ kubeconfig: path });
  assert.deepEqual(config.credentials?.basic, { username: "admin", password: "secret" });
  assert.equal(config.server, "https://h:1/prefix", "the path prefix is kept, the slash dropped");
  assert.ok(new KubeConfigError("x") instanceof Error);
});

Deno.test("exec together with tokenFile or token is refused, naming both", async () => {
  await using dir = await tempDir();
  for (const other of [{ tokenFile: "/nonexistent/token" }, { token: "t" }]) {
    const path = await writeKubeconfig(dir.path, "config", {
      current: "dev",
      clusters: { c: { server: "https://10.0.0.1:6443" } },
      users: {
        u: { exec: { apiVersion: "client.authentication.k8s.io/v1", command: "x" }, ...other },
      },
      contexts: { dev: { cluster: "c", user: "u" } },
    });
    await rejectsWith(
      loadKubeConfig({ kubeconfig: path, env: {} }),
      "exec",
      `is set together with ${Object.keys(other)[0]}`,
    );
  }
});

Deno.test("insecure-skip-tls-verify is refused at load, saying to set the CA instead", async () => {
  await using dir = await tempDir();
  const path = await writeKubeconfig(dir.path, "config", {
    current: "dev",
    clusters: { c: { server: "https://10.0.0.1:6443", "insecure-skip-tls-verify": true } },
    users: { u: { token: "t" } },
    contexts: { dev: { cluster: "c", user: "u" } },
  });
  await rejectsWith(
    loadKubeConfig({ kubeconfig: path, env: {} }),
    "insecure-skip-tls-verify",
    "certificate-authority-data",
  );
});

Deno.test("tls-server-name other than the server's host is refused; the same host is accepted", async () => {
  await using dir = await tempDir();
  const write = (name: string) =>
    writeKubeconfig(dir.path, "config", {
      current: "dev",
      clusters: { c: { server: "https://10.0.0.1:6443", "tls-server-name": name } },
      users: { u: { token: "t" } },
      contexts: { dev: { cluster: "c", user: "u" } },
    });
  await rejectsWith(
    loadKubeConfig({ kubeconfig: await write("kubernetes.default"), env: {} }),
    "tls-server-name",
    "set server to https://kubernetes.default:6443",
  );
  const config = await loadKubeConfig({ kubeconfig: await write("10.0.0.1"), env: {} });
  assert.equal(config.server, "https://10.0.0.1:6443");
});
