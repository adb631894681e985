import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { ExecCredentialSource } from "../../k8s/config/exec_credential.ts";
import { loadKubeConfig } from "../../k8s/config/load.ts";
import { isKubeConfigError } from "../../k8s/errors.ts";
import { FakeClock } from "../fakes/clock.ts";
import { fakePem, tempDir } from "./_fixtures.ts";

const V1 = "client.authentication.k8s.io/v1";

/**
 * Writes a plugin script that records its input and each run, then prints `status` as an
 * ExecCredential of `apiVersion`.
 */
async function writePlugin(
  dir: string,
  status: Record<string, unknown>,
  apiVersion = V1,
): Promise<string> {
  const path = join(dir, "plugin.sh");
  const credential = JSON.stringify({ apiVersion, kind: "ExecCredential", status });
  await Deno.writeTextFile(
    path,
    [
      "#!/bin/sh",
      `printf '%s' "$KUBERNETES_EXEC_INFO" > "${dir}/exec-info.json"`,
      `printf '%s' "$PLUGIN_GREETING" > "${dir}/greeting"`,
      `echo run >> "${dir}/runs"`,
      `cat <<'JSON'`,
      credential,
      "JSON",
    ].join("\n"),
  );
  await Deno.chmod(path, 0o755);
  return path;
}

async function runs(dir: string): Promise<number> {
  const text = await Deno.readTextFile(join(dir, "runs")).catch(() => "");
  return text.split("\n").filter((l) => l === "run").length;
}

Deno.test("an exec plugin's token is used, and the plugin is told it is not interactive", async () => {
  await using dir = await tempDir();
  const command = await writePlugin(dir.path, { token: "from-plugin" });
  const source = new ExecCredentialSource({
    apiVersion: V1,
    command,
    interactiveMode: "IfAvailable",
    provideClusterInfo: true,
    env: [{ name: "PLUGIN_GREETING", value: "hello" }],
  }, { cluster: { server: "https://h:6443" } });
  assert.deepEqual(await source.get(), { token: "from-plugin" });
  const info = JSON.parse(await Deno.readTextFile(join(dir.path, "exec-info.json")));
  assert.equal(info.apiVersion, V1);
  assert.equal(info.kind, "ExecCredential");
  assert.equal(info.spec.interactive, false);
  assert.equal(info.spec.cluster.server, "https://h:6443");
  assert.equal(await Deno.readTextFile(join(dir.path, "greeting")), "hello");
});

Deno.test("exec credentials are reused until they expire, and fetched again after", async () => {
  await using dir = await tempDir();
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const command = await writePlugin(dir.path, {
    token: "t",
    expirationTimestamp: "2026-01-01T00:10:00Z",
  });
  const source = new ExecCredentialSource({ apiVersion: V1, command }, { clock });
  await source.get();
  await source.get();
  assert.equal(await runs(dir.path), 1);
  await clock.advance(11 * 60_000);
  await source.get();
  assert.equal(await runs(dir.path), 2);
  await clock.advance(60_000);
  source.invalidate();
  await source.get();
  assert.equal(await runs(dir.path), 3, "after a 401 the plugin runs again");
});

Deno.test("a credential rejected for good runs the plugin once per burst of 401s, backing off", async () => {
  await using dir = await tempDir();
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const command = await writePlugin(dir.path, { token: "refused" });
  const source = new ExecCredentialSource({ apiVersion: V1, command }, { clock });
  /** Ten requests each get a 401 and invalidate, as the client does, then ask again. */
  const burst = async () => {
    for (let i = 0; i < 10; i++) {
      await source.get();
      source.invalidate();
    }
    await source.get();
  };
  await burst();
  assert.equal(
    await runs(dir.path),
    2,
    "the first 401 runs it again at once (a revoked token is replaced), the rest of the burst not",
  );
  await clock.advance(1_000);
  await burst();
  assert.equal(await runs(dir.path), 3, "the replacement rejected too: one run a second later");
  await clock.advance(1_000);
  await burst();
  assert.equal(await runs(dir.path), 3, "then it waits 2 s");
  await clock.advance(1_000);
  await burst();
  assert.equal(await runs(dir.path), 4);
  // Steady 401s for ten minutes: runs double their spacing up to 5 min, so a handful, not
  // one per request.
  for (let s = 0; s < 600; s++) {
    await clock.advance(1_000);
    await burst();
  }
  const total = await runs(dir.path);
  assert.ok(total <= 13, `${total} runs in ten minutes of 401s`);
});

Deno.test("callers asking at the same time share one plugin run", async () => {
  await using dir = await tempDir();
  const command = await writePlugin(dir.path, { token: "t" });
  const source = new ExecCredentialSource({ apiVersion: V1, command });
  const answers = await Promise.all([source.get(), source.get(), source.get()]);
  assert.deepEqual(answers.map((a) => a.token), ["t", "t", "t"]);
  assert.equal(await runs(dir.path), 1);
});

Deno.test("an exec plugin may return a client certificate instead of a token", async () => {
  await using dir = await tempDir();
  const cert = fakePem("CERTIFICATE");
  const key = fakePem("PRIVATE KEY");
  const command = await writePlugin(dir.path, {
    clientCertificateData: cert,
    clientKeyData: key,
  }, "client.authentication.k8s.io/v1beta1");
  const source = new ExecCredentialSource({
    apiVersion: "client.authentication.k8s.io/v1beta1",
    command,
  });
  assert.deepEqual(await source.get(), { clientCertificate: { cert, key } });
});

Deno.test("a failing plugin's stderr and install hint reach the error", async () => {
  await using dir = await tempDir();
  const command = join(dir.path, "fail.sh");
  await Deno.writeTextFile(command, "#!/bin/sh\necho 'login expired' >&2\nexit 3\n");
  await Deno.chmod(command, 0o755);
  const source = new ExecCredentialSource({
    apiVersion: V1,
    command,
    installHint: "run `cloud login` first",
  }, { kubeconfigPath: "/k/config", field: "users[0].user.exec" });
  const err = await source.get().catch((e) => e);
  assert.ok(isKubeConfigError(err));
  assert.match(err.message, /^kubeconfig \/k\/config: users\[0\]\.user\.exec command .*fail\.sh/);
  assert.match(err.message, /exited with 3: login expired; run `cloud login` first/);
});

Deno.test("a plugin answering in the wrong apiVersion, or without credentials, is refused", async () => {
  await using dir = await tempDir();
  const wrongVersion = await writePlugin(
    dir.path,
    { token: "t" },
    "client.authentication.k8s.io/v1beta1",
  );
  const err = await new ExecCredentialSource({ apiVersion: V1, command: wrongVersion }).get()
    .catch((e) => e);
  assert.ok(isKubeConfigError(err));
  assert.match(err.message, /expected an ExecCredential of client\.authentication\.k8s\.io\/v1/);
  const empty = await writePlugin(dir.path, {});
  const err2 = await new ExecCredentialSource({ apiVersion: V1, command: empty }).get()
    .catch((e) => e);
  assert.match(err2.message, /neither status\.token nor a client certificate/);
});

Deno.test("a missing plugin command and interactiveMode Always fail before any request", async () => {
  const missing = await new ExecCredentialSource({ apiVersion: V1, command: "vk-no-such-plugin" })
    .get().catch((e) => e);
  assert.match(missing.message, /vk-no-such-plugin was not found; install it/);
  const always = await new ExecCredentialSource({
    apiVersion: V1,
    command: "true",
    interactiveMode: "Always",
  }).get().catch((e) => e);
  assert.match(always.message, /interactive terminal/);
});

Deno.test("a kubeconfig's relative exec command runs from the kubeconfig's folder", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(join(dir.path, "bin"));
  await writePlugin(join(dir.path, "bin"), { token: "relative" });
  const path = join(dir.path, "config");
  await Deno.writeTextFile(
    path,
    stringify({
      "current-context": "x",
      clusters: [{ name: "c", cluster: { server: "https://h:1" } }],
      users: [{
        name: "u",
        user: { exec: { apiVersion: V1, command: "./bin/plugin.sh", interactiveMode: "Never" } },
      }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    }),
  );
  const config = await loadKubeConfig({ kubeconfig: path });
  assert.deepEqual(await config.credentialSource!.get(), { token: "relative" });
});

Deno.test("an exec stanza without apiVersion names the field to fix", async () => {
  await using dir = await tempDir();
  const path = join(dir.path, "config");
  await Deno.writeTextFile(
    path,
    stringify({ users: [{ name: "u", user: { exec: { command: "x" } } }] }),
  );
  const err = await loadKubeConfig({ kubeconfig: path }).catch((e) => e);
  assert.equal(
    err.message,
    `kubeconfig ${path}: users[0].user.exec.apiVersion is missing or empty; set it`,
  );
});
