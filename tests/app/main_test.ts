import assert from "node:assert/strict";
import { VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";
import { createSelfSignedCertificate, generateKeyPair, privateKeyPem } from "../../x509/encode.ts";

const mainPath = new URL("../../main.ts", import.meta.url).pathname;

async function vkubelet(
  args: string[],
  env: Record<string, string> = {},
  permissions = ["--allow-read", "--allow-env", "--allow-sys", "--allow-net"],
) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions, mainPath, ...args],
    env: { NO_COLOR: "1", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

Deno.test("--help prints every option and exits 0", async () => {
  const { code, stdout } = await vkubelet(["--help"]);
  assert.equal(code, 0);
  assert.match(stdout, /^vkubelet \d+\.\d+\.\d+: a virtual kubelet/);
  for (const flag of ["--nodename", "--provider-config", "--pod-sync-workers", "--log-format"]) {
    assert.ok(stdout.includes(flag), flag);
  }
  assert.ok(stdout.includes("KUBELET_PORT"));
});

Deno.test("--version from a checkout prints the version from deno.json and the checkout's commit", async () => {
  const git = (args: string[]) =>
    new Deno.Command("git", { args: ["-C", new URL("../..", import.meta.url).pathname, ...args] })
      .output().then((o) => new TextDecoder().decode(o.stdout).trim());
  const head = await git(["rev-parse", "HEAD"]);
  const dirty = await git(["status", "--porcelain", "--untracked-files=no"]) ? "-dirty" : "";
  const { code, stdout } = await vkubelet(
    ["--version"],
    { PATH: Deno.env.get("PATH") ?? "" },
    ["--allow-read", "--allow-env", "--allow-run"],
  );
  const denoJson = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  assert.equal(code, 0);
  assert.equal(
    stdout,
    `vkubelet ${denoJson.version} (commit ${head}${dirty}, read from the git checkout)\n`,
  );
});

Deno.test("--version without --allow-run says why the commit is unknown, and exits 0", async () => {
  const { code, stdout } = await vkubelet(["--version"]);
  assert.equal(code, 0);
  assert.match(stdout, /^vkubelet \d+\.\d+\.\d+ \(commit unknown: git may not run \(--allow-run\)/);
});

Deno.test("bad config exits 2 naming every problem on stderr", async () => {
  const { code, stdout, stderr } = await vkubelet(
    ["--provider", "nope", "--nodename=Bad_Name", "--pod-sync-workers=0", "--bogus"],
    { KUBELET_PORT: "port" },
  );
  assert.equal(code, 2);
  assert.equal(stdout, "");
  assert.match(stderr, /^vkubelet: invalid configuration:\n/);
  assert.ok(stderr.includes("  - unknown flag --bogus"));
  for (
    const field of ["--provider", "--nodename", "--pod-sync-workers", "KUBELET_PORT"]
  ) {
    assert.match(stderr, new RegExp(`  - ${field}`), field);
  }
  assert.match(stderr, /Run vkubelet --help/);
});

Deno.test("virtual-kubelet's flags warn instead of failing, also next to real errors", async () => {
  const { code, stderr } = await vkubelet(["--provider=nope", "--namespace", "x", "-v=4"]);
  assert.equal(code, 2);
  assert.match(stderr, /^ {2}- warning: --namespace ignored: /m);
  assert.match(stderr, /^ {2}- warning: -v=4 .*--log-level=debug/m);
  assert.doesNotMatch(stderr, /unknown flag/);
});

Deno.test("a provider config the provider rejects exits 2 before anything starts", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/mock.yaml`, "podCIDR: 192.168.0.0/16\n");
    const { code, stderr } = await vkubelet([
      "--provider=mock",
      `--provider-config=${dir}/mock.yaml`,
      // The kubeconfig is checked first: the provider is loaded only once it loads.
      `--kubeconfig=${await writeKubeconfig(dir)}`,
      "--port=0",
    ]);
    assert.equal(code, 2);
    assert.match(stderr, /podCIDR: 192\.168\.0\.0\/16 is not inside the loopback range/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A kubeconfig that loads (a token for a loopback server nobody needs to reach). */
async function writeKubeconfig(dir: string): Promise<string> {
  const path = `${dir}/kubeconfig`;
  await Deno.writeTextFile(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]",
      "users: [{name: u, user: {token: t}}]",
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      "current-context: x",
      "",
    ].join("\n"),
  );
  return path;
}

async function writeServingPair(dir: string, name: string) {
  const keys = await generateKeyPair();
  const now = Date.now();
  const cert = await createSelfSignedCertificate(keys, { commonName: name }, {
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 3600_000),
  });
  await Deno.writeTextFile(`${dir}/${name}.crt`, cert);
  await Deno.writeTextFile(`${dir}/${name}.key`, await privateKeyPem(keys));
  return { cert: `${dir}/${name}.crt`, key: `${dir}/${name}.key` };
}

Deno.test("a --port in use exits 1 (a restart may find it free) naming --port before the cluster is contacted", async () => {
  const dir = await Deno.makeTempDir();
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (taken.addr as Deno.NetAddr).port;
    const { code, stderr } = await vkubelet([
      "--provider=mock",
      `--kubeconfig=${await writeKubeconfig(dir)}`,
      "--listen-address=127.0.0.1",
      `--port=${port}`,
      "--tls-self-signed",
    ]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /vkubelet: cannot start:/);
    assert.match(
      stderr,
      new RegExp(`--port ${port} on 127\\.0\\.0\\.1: the address is already in use`),
    );
  } finally {
    taken.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a serving certificate that is not PEM, or a key of another certificate, exits 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const kubeconfig = await writeKubeconfig(dir);
    const a = await writeServingPair(dir, "a");
    const b = await writeServingPair(dir, "b");
    await Deno.writeTextFile(`${dir}/junk.crt`, "not a certificate\n");
    const run = (cert: string, key: string) =>
      vkubelet([
        "--provider=mock",
        `--kubeconfig=${kubeconfig}`,
        "--listen-address=127.0.0.1",
        "--port=0",
        `--tls-cert-file=${cert}`,
        `--tls-private-key-file=${key}`,
      ]);
    const junk = await run(`${dir}/junk.crt`, a.key);
    assert.equal(junk.code, 2, junk.stderr);
    assert.match(junk.stderr, /--tls-cert-file \S+junk\.crt does not hold a PEM certificate/);
    const mismatch = await run(a.cert, b.key);
    assert.equal(mismatch.code, 2, mismatch.stderr);
    assert.match(
      mismatch.stderr,
      /--tls-private-key-file \S+b\.key does not belong to the certificate in --tls-cert-file/,
    );
    const keyAsCert = await run(a.cert, a.cert);
    assert.equal(keyAsCert.code, 2, keyAsCert.stderr);
    assert.match(
      keyAsCert.stderr,
      /--tls-private-key-file \S+a\.crt does not hold a PEM private key/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a bad kubeconfig exits 2 before the process provider touches the host", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/process.yaml`, `stateDir: ${dir}/state\n`);
    await Deno.writeTextFile(`${dir}/kubeconfig`, "apiVersion: v1\nkind: Config\n");
    const { code, stderr } = await vkubelet(
      [
        "--provider=process",
        `--provider-config=${dir}/process.yaml`,
        `--kubeconfig=${dir}/kubeconfig`,
        "--listen-address=127.0.0.1",
        "--port=0",
        "--tls-self-signed",
      ],
      { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
      [...VKUBELET_PERMISSIONS],
    );
    assert.equal(code, 2, stderr);
    assert.match(stderr, /kubeconfig/);
    await assert.rejects(Deno.stat(`${dir}/state`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a --port in use next to a config problem exits 2 naming both", async () => {
  const dir = await Deno.makeTempDir();
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (taken.addr as Deno.NetAddr).port;
    await Deno.writeTextFile(`${dir}/kubeconfig`, "apiVersion: v1\nkind: Config\n");
    const { code, stderr } = await vkubelet([
      "--provider=mock",
      `--kubeconfig=${dir}/kubeconfig`,
      "--listen-address=127.0.0.1",
      `--port=${port}`,
      "--tls-self-signed",
    ]);
    assert.equal(code, 2, stderr);
    assert.match(stderr, /already in use/);
    assert.match(stderr, /kubeconfig/);
  } finally {
    taken.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--provider=process with --leader-elect exits 2 before the state dir is created", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/process.yaml`, `stateDir: ${dir}/state\n`);
    const { code, stderr } = await vkubelet(
      [
        "--provider=process",
        `--provider-config=${dir}/process.yaml`,
        `--kubeconfig=${await writeKubeconfig(dir)}`,
        "--listen-address=127.0.0.1",
        "--port=0",
        "--tls-self-signed",
        "--leader-elect",
      ],
      { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
      [...VKUBELET_PERMISSIONS],
    );
    assert.equal(code, 2, stderr);
    assert.match(stderr, /--leader-elect: provider process cannot run as several replicas/);
    await assert.rejects(Deno.stat(`${dir}/state`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--native-heap-trim=false opens no C library and says so", async () => {
  const dir = await Deno.makeTempDir();
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const { code, stderr } = await vkubelet(
      [
        "--provider=mock",
        `--kubeconfig=${await writeKubeconfig(dir)}`,
        "--listen-address=127.0.0.1",
        `--port=${(taken.addr as Deno.NetAddr).port}`,
        "--tls-self-signed",
        "--native-heap-trim=false",
      ],
      { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
      [...VKUBELET_PERMISSIONS],
    );
    assert.equal(code, 1, stderr);
    assert.match(
      stderr,
      /not returning freed native memory to the system: --native-heap-trim=false/,
    );
  } finally {
    taken.close();
    await Deno.remove(dir, { recursive: true });
  }
});
