/**
 * TLS bootstrap and client-certificate rotation against the real apiserver (cluster "ident",
 * whose controller manager approves and signs node client certificates): a node joins with a
 * bootstrap token only, renews its certificate early (a 600 s certificate, renewal forced to a
 * point a few seconds after start-up through a test hook) and stays Ready; a restart reuses the
 * stored certificate; a refused token is logged with what to do and retried, never a crash.
 * With kubeadm's flags (`--bootstrap-kubeconfig X --kubeconfig Y`) a missing Y is bootstrapped
 * and written, a valid Y is used without X, and a Y whose certificate expired bootstraps again.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { loadConfig } from "../../app/config/config.ts";
import { runVkubelet } from "../../app/run/mod.ts";
import type { NodeIdentityHooks } from "../../app/node_identity.ts";
import { realClock } from "../../base/clock.ts";
import {
  createSelfSignedCertificate,
  generateKeyPair,
  type KeyPair,
  privateKeyPem,
} from "../../x509/mod.ts";
import { eventually } from "../../tools/harness/wait.ts";

const CLUSTER = Deno.env.get("VKUBELET_IDENTITY_CLUSTER") ?? "ident";

/** A bootstrap token Secret in kube-system and a kubeconfig that presents it. */
async function bootstrapKubeconfig(cluster: TestCluster, dir: string, valid = true) {
  const id = crypto.randomUUID().replaceAll("-", "").slice(0, 6);
  const secret = crypto.randomUUID().replaceAll("-", "").slice(0, 16);
  if (valid) {
    const created = await cluster.kubectl(["apply", "-f", "-"], {
      stdin: JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        type: "bootstrap.kubernetes.io/token",
        metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
        stringData: {
          "token-id": id,
          "token-secret": secret,
          "usage-bootstrap-authentication": "true",
          expiration: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z"),
        },
      }),
    });
    assert.equal(created.code, 0, created.stderr);
  }
  const ca = btoa(await Deno.readTextFile(`${cluster.pkiDir}/ca.crt`));
  const path = `${dir}/bootstrap.kubeconfig`;
  await Deno.writeTextFile(
    path,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: ${cluster.server}\n` +
      `    certificate-authority-data: ${ca}\nusers:\n- name: u\n  user:\n    token: ${id}.${secret}\n` +
      `contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
  );
  return path;
}

async function configFor(
  nodeName: string,
  bootstrap: string,
  certDir: string,
  extra: string[] = [],
) {
  const loaded = await loadConfig({
    args: [
      ...extra,
      "--provider=mock",
      `--hostname-override=${nodeName}`,
      `--bootstrap-kubeconfig=${bootstrap}`,
      `--cert-dir=${certDir}`,
      "--listen-address=127.0.0.1",
      "--node-ip=127.0.0.1",
      "--port=0",
      "--tls-self-signed",
    ],
    env: {},
    readFile: Deno.readTextFile,
  });
  assert.ok(loaded.ok, JSON.stringify(loaded));
  return loaded.config;
}

function start(config: Awaited<ReturnType<typeof configFor>>, hooks: NodeIdentityHooks = {}) {
  const stop = new AbortController();
  let ready = false;
  const run = runVkubelet(config, {
    signal: stop.signal,
    clock: realClock,
    detectInternalIp: () => "127.0.0.1",
    drainTimeoutMs: 5_000,
    identityHooks: hooks,
    onReady: () => ready = true,
  });
  run.catch(() => {});
  return { stop, run, isReady: () => ready };
}

async function nodeCsrs(cluster: TestCluster, nodeName: string) {
  const out = await cluster.kubectl(["get", "csr", "-o", "json"]);
  const items = JSON.parse(out.stdout).items as {
    metadata: { name: string };
    spec: { signerName: string; username: string; request: string };
    status?: { conditions?: { type: string }[] };
  }[];
  return items.filter((c) =>
    c.metadata.name.startsWith(`csr-${nodeName}-`) &&
    c.spec.signerName === "kubernetes.io/kube-apiserver-client-kubelet"
  );
}

async function nodeReady(cluster: TestCluster, nodeName: string): Promise<boolean | undefined> {
  const out = await cluster.kubectl(["get", "node", nodeName, "-o", "json"]);
  if (out.code !== 0) return undefined;
  const node = JSON.parse(out.stdout);
  const ready = node.status?.conditions?.find((c: { type: string }) => c.type === "Ready");
  return ready?.status === "True";
}

Deno.test("a node joins with a bootstrap token, rotates its certificate early and stays Ready; a restart reuses it", async () => {
  const cluster = await useCluster(CLUSTER);
  const dir = await Deno.makeTempDir({ prefix: "vk-ident-" });
  const nodeName = `ident-${crypto.randomUUID().slice(0, 6)}`;
  const config = await configFor(nodeName, await bootstrapKubeconfig(cluster, dir), `${dir}/pki`);
  const pairs: KeyPair[] = [];
  let renewAt = 0;
  const hooks: NodeIdentityHooks = {
    clientCertificateExpirationSeconds: 600,
    onClientCertificate: (pair) => pairs.push(pair),
    // The first certificate is renewed 20 s from now, later ones at 90 % as usual.
    clientCertificateRenewFraction: () => {
      if (pairs.length > 1) return 0.9;
      const cert = new X509Certificate(pairs[0].certPem);
      const from = Date.parse(cert.validFrom);
      renewAt = Date.now() + 20_000;
      return (renewAt - from) / (Date.parse(cert.validTo) - from);
    },
  };
  let first = start(config, hooks);
  try {
    await eventually(
      "the node to be Ready",
      async () => first.isReady() && await nodeReady(cluster, nodeName) ? true : undefined,
      90_000,
    );
    const issued = new X509Certificate(pairs[0].certPem);
    assert.match(issued.subject, new RegExp(`CN=system:node:${nodeName}`));
    assert.match(issued.subject, /O=system:nodes/);
    const lifetime = Date.parse(issued.validTo) - Date.parse(issued.validFrom);
    assert.ok(lifetime <= 20 * 60_000, `a short-lived certificate, got ${lifetime} ms`);
    const stored = await Deno.stat(`${dir}/pki/${nodeName}-client-current.pem`);
    assert.equal(stored.mode! & 0o777, 0o600);
    const kubeconfig = await Deno.readTextFile(`${dir}/pki/${nodeName}.kubeconfig`);
    assert.match(kubeconfig, new RegExp(`client-certificate: .*${nodeName}-client-current.pem`));
    const whoami = await cluster.kubectl([
      `--kubeconfig=${dir}/pki/${nodeName}.kubeconfig`,
      "get",
      "node",
      nodeName,
    ]);
    assert.equal(whoami.code, 0, `the written kubeconfig works as the node: ${whoami.stderr}`);
    // Across the rotation the node is watched every second: it never leaves Ready.
    const notReady: number[] = [];
    await eventually("a rotated certificate", async () => {
      if (await nodeReady(cluster, nodeName) !== true) notReady.push(Date.now());
      return pairs.length >= 2 ? true : undefined;
    }, 90_000);
    const rotatedAt = Date.now();
    assert.notEqual(pairs[1].keyPem, pairs[0].keyPem, "a new key");
    assert.equal(
      await Deno.readTextFile(`${dir}/pki/${nodeName}-client-current.pem`),
      `${pairs[1].certPem.trimEnd()}\n${pairs[1].keyPem.trimEnd()}\n`,
    );
    const csrs = await nodeCsrs(cluster, nodeName);
    assert.equal(csrs.length, 2);
    const users = csrs.map((c) => c.spec.username).sort();
    assert.match(users[0], /^system:bootstrap:/, "the first CSR was filed with the token");
    assert.equal(users[1], `system:node:${nodeName}`, "the renewal was filed as the node");
    // The lease keeps being renewed with the new certificate.
    await eventually("the lease renewed after the rotation", async () => {
      if (await nodeReady(cluster, nodeName) !== true) notReady.push(Date.now());
      const out = await cluster.kubectl([
        "-n",
        "kube-node-lease",
        "get",
        "lease",
        nodeName,
        "-o",
        "json",
      ]);
      const renew = Date.parse(JSON.parse(out.stdout).spec.renewTime);
      return renew > rotatedAt + 10_000 ? true : undefined;
    }, 90_000);
    assert.deepEqual(notReady, [], "the node stayed Ready across the rotation");
    first.stop.abort();
    await first.run;
    // A restart uses the stored certificate: no new CSR.
    first = start(await configFor(nodeName, `${dir}/bootstrap.kubeconfig`, `${dir}/pki`), {
      onClientCertificate: (pair) => pairs.push(pair),
    });
    await eventually(
      "the restarted node to be ready",
      () => Promise.resolve(first.isReady() ? true : undefined),
      90_000,
    );
    assert.equal(pairs.at(-1)!.certPem, pairs[1].certPem, "the stored certificate is reused");
    assert.equal((await nodeCsrs(cluster, nodeName)).length, 2, "no new CSR after a restart");
  } finally {
    first.stop.abort();
    await first.run.catch(() => {});
    await cluster.kubectl(["delete", "node", nodeName, "--ignore-not-found", "--wait=false"]);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a refused bootstrap token is logged with what to do and retried, never a crash", async () => {
  const cluster = await useCluster(CLUSTER);
  const dir = await Deno.makeTempDir({ prefix: "vk-ident-" });
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { memory: (r) => records.push(r) },
    loggers: [
      { category: ["vkubelet", "identity"], lowestLevel: "info", sinks: ["memory"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["memory"] },
    ],
  });
  const nodeName = `ident-bad-${crypto.randomUUID().slice(0, 6)}`;
  const config = await configFor(
    nodeName,
    await bootstrapKubeconfig(cluster, dir, false),
    `${dir}/pki`,
  );
  const running = start(config);
  try {
    const text = (r: LogRecord) =>
      r.message.map((m) => typeof m === "string" ? m : String(m)).join("");
    const line = await eventually("the refusal to be logged twice", () => {
      const failures = records.filter((r) => /request failed; asking again/.test(text(r)));
      return Promise.resolve(failures.length >= 2 ? text(failures[0]) : undefined);
    }, 30_000);
    assert.match(line, /bootstrap credential in .*bootstrap\.kubeconfig was refused/);
    assert.match(line, /create a new one/);
    assert.equal(running.isReady(), false);
  } finally {
    running.stop.abort();
    await running.run.catch(() => {}); // stopped while waiting for a certificate
    await reset();
    await Deno.remove(dir, { recursive: true });
  }
});

/** A certificate and key for the node that expired yesterday, as one stored file holds them. */
async function expiredNodePair(nodeName: string): Promise<string> {
  const keys = await generateKeyPair();
  const day = 86_400_000;
  const cert = await createSelfSignedCertificate(
    keys,
    { commonName: `system:node:${nodeName}`, organizations: ["system:nodes"] },
    { notBefore: new Date(Date.now() - 2 * day), notAfter: new Date(Date.now() - day) },
  );
  return `${cert.trimEnd()}\n${(await privateKeyPem(keys)).trimEnd()}\n`;
}

Deno.test("kubeadm flags: a missing --kubeconfig is bootstrapped and written, a valid one is used without the bootstrap file, an expired one bootstraps again", async () => {
  const cluster = await useCluster(CLUSTER);
  const dir = await Deno.makeTempDir({ prefix: "vk-ident-" });
  const nodeName = `ident-kadm-${crypto.randomUUID().slice(0, 6)}`;
  const pki = `${dir}/pki`;
  const nodeKubeconfig = `${dir}/kubelet.conf`;
  const certFile = `${pki}/${nodeName}-client-current.pem`;
  // As a kubeadm node runs the kubelet (kubeadm's 10-kubeadm.conf drop-in).
  const flags = [`--kubeconfig=${nodeKubeconfig}`];
  const waitReady = (run: ReturnType<typeof start>) =>
    eventually(
      "the node to be Ready",
      async () => run.isReady() && await nodeReady(cluster, nodeName) ? true : undefined,
      90_000,
    );
  const asNode = () =>
    cluster.kubectl([`--kubeconfig=${nodeKubeconfig}`, "auth", "whoami", "-o", "json"]);
  let running = start(
    await configFor(nodeName, await bootstrapKubeconfig(cluster, dir), pki, flags),
  );
  try {
    // 1. No kubelet.conf yet: TLS bootstrap, then kubelet.conf names the certificate file.
    await waitReady(running);
    const written = await Deno.readTextFile(nodeKubeconfig);
    assert.equal((await Deno.stat(nodeKubeconfig)).mode! & 0o777, 0o600);
    assert.match(written, new RegExp(`client-certificate: ${certFile}\n`));
    const whoami = await asNode();
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.equal(JSON.parse(whoami.stdout).status.userInfo.username, `system:node:${nodeName}`);
    const first = await nodeCsrs(cluster, nodeName);
    assert.equal(first.length, 1);
    assert.match(first[0].spec.username, /^system:bootstrap:/);
    running.stop.abort();
    await running.run;

    // 2. kubeadm deletes the bootstrap kubeconfig after the join: kubelet.conf is enough.
    await Deno.remove(`${dir}/bootstrap.kubeconfig`);
    running = start(await configFor(nodeName, `${dir}/bootstrap.kubeconfig`, pki, flags));
    await waitReady(running);
    assert.equal((await nodeCsrs(cluster, nodeName)).length, 1, "no new CSR with a valid Y");
    assert.equal(await Deno.readTextFile(nodeKubeconfig), written, "kubelet.conf left as it is");
    running.stop.abort();
    await running.run;

    // 3. The certificate expired and there is no bootstrap kubeconfig: a clear refusal.
    await Deno.writeTextFile(certFile, await expiredNodePair(nodeName));
    running = start(await configFor(nodeName, `${dir}/bootstrap.kubeconfig`, pki, flags));
    await assert.rejects(running.run, (err: Error) => {
      assert.match(err.message, /the node has no credential: --kubeconfig .*kubelet\.conf/);
      assert.match(err.message, /expired at/);
      assert.match(err.message, /bootstrap kubeconfig cannot be used/);
      return true;
    });

    // 4. With a new bootstrap token, the expired certificate is replaced through a new CSR.
    running = start(
      await configFor(nodeName, await bootstrapKubeconfig(cluster, dir), pki, flags),
    );
    await waitReady(running);
    const csrs = await nodeCsrs(cluster, nodeName);
    assert.equal(csrs.length, 2, "bootstrapped again");
    assert.ok(csrs.every((c) => c.spec.username.startsWith("system:bootstrap:")));
    const renewed = new X509Certificate(await Deno.readTextFile(certFile));
    assert.ok(Date.parse(renewed.validTo) > Date.now(), "a valid certificate replaced it");
    const again = await asNode();
    assert.equal(again.code, 0, again.stderr);
  } finally {
    running.stop.abort();
    await running.run.catch(() => {});
    await cluster.kubectl(["delete", "node", nodeName, "--ignore-not-found", "--wait=false"]);
    await Deno.remove(dir, { recursive: true });
  }
});
