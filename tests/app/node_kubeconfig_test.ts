import assert from "node:assert/strict";
import { realClock } from "../../base/clock.ts";
import { loadConfig } from "../../app/config/config.ts";
import { startNodeIdentity } from "../../app/node_identity.ts";
import { readNodeKubeconfig, writeNodeKubeconfig } from "../../app/node_kubeconfig.ts";
import { isKubeConfigError } from "../../k8s/mod.ts";
import { createSelfSignedCertificate, generateKeyPair, privateKeyPem } from "../../x509/mod.ts";

const DAY = 86_400_000;

/** A node certificate and key in one PEM file, valid from `from` to `to` (ms from now). */
async function pemFile(dir: string, node: string, from: number, to: number): Promise<string> {
  const keys = await generateKeyPair();
  const cert = await createSelfSignedCertificate(
    keys,
    { commonName: `system:node:${node}`, organizations: ["system:nodes"] },
    { notBefore: new Date(Date.now() + from), notAfter: new Date(Date.now() + to) },
  );
  const path = `${dir}/${node}-client-current.pem`;
  await Deno.writeTextFile(path, `${cert}${await privateKeyPem(keys)}`);
  return path;
}

const cluster = { server: "https://127.0.0.1:6443", caCerts: undefined, proxyUrl: undefined };

Deno.test("the node kubeconfig is written 0600, naming the certificate file by absolute path, and read back as usable", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cert = await pemFile(dir, "n1", -DAY, DAY);
    const path = `${dir}/etc/kubelet.conf`;
    await writeNodeKubeconfig(path, cluster, cert);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    assert.match(await Deno.readTextFile(path), new RegExp(`client-certificate: ${cert}\n`));
    const read = await readNodeKubeconfig(path, realClock);
    assert.ok(read.usable, JSON.stringify(read));
    assert.equal(read.connection.server, cluster.server);
    assert.equal(read.pair.certPem, (await Deno.readTextFile(cert)).split(/(?=-----BEGIN P)/)[0]);
    assert.equal(read.connection.credentials?.clientCertificate?.cert, read.pair.certPem);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a missing, broken, certificate-less or expired node kubeconfig is a reason to bootstrap, each named", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const missing = await readNodeKubeconfig(`${dir}/none.conf`, realClock);
    assert.deepEqual(missing, { usable: false, missing: true, problem: "does not exist yet" });
    await Deno.writeTextFile(`${dir}/broken.conf`, "clusters: [");
    const broken = await readNodeKubeconfig(`${dir}/broken.conf`, realClock);
    assert.ok(!broken.usable && !broken.missing);
    assert.match(broken.problem, /^cannot be used: /);
    await Deno.writeTextFile(
      `${dir}/token.conf`,
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://127.0.0.1:1}}]\n" +
        "users: [{name: u, user: {token: abc}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n" +
        "current-context: x\n",
    );
    const token = await readNodeKubeconfig(`${dir}/token.conf`, realClock);
    assert.ok(!token.usable);
    assert.equal(token.problem, "holds no client certificate");
    await writeNodeKubeconfig(`${dir}/old.conf`, cluster, await pemFile(dir, "n2", -2 * DAY, -DAY));
    const expired = await readNodeKubeconfig(`${dir}/old.conf`, realClock);
    assert.ok(!expired.usable);
    assert.match(expired.problem, /^holds a client certificate that expired at \d{4}-/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function identityConfig(dir: string, node: string, extra: string[]) {
  const loaded = await loadConfig({
    args: [
      "--provider=mock",
      `--hostname-override=${node}`,
      `--bootstrap-kubeconfig=${dir}/bootstrap.conf`,
      `--kubeconfig=${dir}/kubelet.conf`,
      `--cert-dir=${dir}/pki`,
      "--tls-self-signed",
      ...extra,
    ],
    env: {},
    readFile: Deno.readTextFile,
  });
  assert.ok(loaded.ok, JSON.stringify(loaded));
  return loaded.config;
}

Deno.test("a valid node kubeconfig is used as it is, without reading the bootstrap kubeconfig, and rotation starts from its certificate", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeNodeKubeconfig(`${dir}/kubelet.conf`, cluster, await pemFile(dir, "n3", -DAY, DAY));
    const config = await identityConfig(dir, "n3", ["--rotate-certificates=false"]);
    const identity = await startNodeIdentity(config, {
      clock: realClock,
      signal: new AbortController().signal,
    });
    assert.match(identity.connection.source, /kubelet\.conf/);
    const fromFile = identity.connection.credentials?.clientCertificate;
    assert.ok(fromFile);
    await identity.stop();
    // With rotation (the default) the same certificate is where rotation starts from.
    const rotating = await startNodeIdentity(await identityConfig(dir, "n3", []), {
      clock: realClock,
      signal: new AbortController().signal,
    });
    const presented = await rotating.connection.credentialSource!.get();
    assert.equal(presented.clientCertificate?.cert, fromFile.cert);
    await rotating.stop();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with neither an unexpired node kubeconfig nor a bootstrap kubeconfig, start-up says both and what to do", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeNodeKubeconfig(
      `${dir}/kubelet.conf`,
      cluster,
      await pemFile(dir, "n4", -2 * DAY, -DAY),
    );
    const config = await identityConfig(dir, "n4", []);
    await assert.rejects(
      startNodeIdentity(config, { clock: realClock, signal: new AbortController().signal }),
      (err: Error) => {
        assert.ok(isKubeConfigError(err));
        assert.match(
          err.message,
          /^the node has no credential: --kubeconfig .*kubelet\.conf holds a client certificate that expired at/,
        );
        assert.match(err.message, /bootstrap kubeconfig cannot be used \(.*bootstrap\.conf/);
        assert.match(err.message, /kubeadm token create/);
        return true;
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
