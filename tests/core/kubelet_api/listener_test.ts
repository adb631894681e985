import assert from "node:assert/strict";
import tls from "node:tls";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { call, startClusterServer } from "../../../tools/harness/cluster_server.ts";

const sanitize = { sanitizeOps: true, sanitizeResources: true };

async function run(binary: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(binary, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error(`${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
}

Deno.test({
  name: "the TLS listener authenticates certificates and tokens against the real cluster",
  ...sanitize,
  async fn(t) {
    const cluster = await useCluster();
    await using s = await startClusterServer(cluster, {
      nodeName: `vk-listen-${crypto.randomUUID().slice(0, 6)}`,
      // Refusals are not cached so that the RoleBinding below takes effect at once.
      auth: { denyCacheTtlMs: 0 },
    });

    await t.step("no certificate and no token: 401", async () => {
      const res = await call(s, "/pods");
      assert.equal(res.status, 401);
      assert.equal(JSON.parse(res.body).reason, "Unauthorized");
    });

    await t.step("the apiserver's kubelet client certificate: 200", async () => {
      const cert = {
        certFile: `${cluster.pkiDir}/apiserver-kubelet-client.crt`,
        keyFile: `${cluster.pkiDir}/apiserver-kubelet-client.key`,
      };
      const res = await call(s, "/pods", { cert });
      assert.equal(res.status, 200, res.body);
      assert.equal(JSON.parse(res.body).kind, "PodList");
    });

    await t.step("a certificate from another CA: 401", async () => {
      const dir = await Deno.makeTempDir({ prefix: "vk-other-ca-" });
      try {
        await run(cluster.binary, ["pki", dir]);
        await run(cluster.binary, [
          "cert",
          `--ca=${dir}/ca`,
          `--out=${dir}/rogue`,
          "--cn=kube-apiserver-kubelet-client",
          "--o=system:masters",
        ]);
        const res = await call(s, "/pods", {
          cert: { certFile: `${dir}/rogue.crt`, keyFile: `${dir}/rogue.key` },
        });
        assert.equal(res.status, 401);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });

    await t.step("a service-account token: 403 without RBAC, 200 with nodes/proxy", async () => {
      const ns = await cluster.newNamespace("vk-authz");
      const name = `${ns}-proxy`;
      try {
        assert.equal(
          (await cluster.kubectl(["-n", ns, "create", "serviceaccount", "reader"])).code,
          0,
        );
        const token = (await cluster.kubectl(["-n", ns, "create", "token", "reader"])).stdout
          .trim();
        assert.ok(token.length > 20, "kubectl create token printed a token");
        const denied = await call(s, "/runningpods/", { token });
        assert.equal(denied.status, 403);
        assert.match(
          JSON.parse(denied.body).message,
          new RegExp(`user=system:serviceaccount:${ns}:reader, verb=get, resource=nodes`),
        );
        const made = await cluster.kubectl([
          "create",
          "clusterrole",
          name,
          "--verb=get,create",
          "--resource=nodes/proxy",
        ]);
        assert.equal(made.code, 0, made.stderr);
        const bound = await cluster.kubectl([
          "create",
          "clusterrolebinding",
          name,
          `--clusterrole=${name}`,
          `--serviceaccount=${ns}:reader`,
        ]);
        assert.equal(bound.code, 0, bound.stderr);
        let status = 0;
        for (let i = 0; i < 50 && status !== 200; i++) {
          status = (await call(s, "/runningpods/", { token })).status;
          if (status !== 200) await new Promise((r) => setTimeout(r, 200));
        }
        assert.equal(status, 200);
      } finally {
        await cluster.kubectl([
          "delete",
          "clusterrolebinding,clusterrole",
          name,
          "--ignore-not-found",
        ]);
        await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      }
    });

    await t.step("ALPN never selects h2", async () => {
      const protocol = await alpn(s.port, ["h2", "http/1.1"], s.caPem);
      assert.equal(protocol, "http/1.1");
    });

    await t.step("an upgrade request runs through the same auth and routes", async () => {
      const head = (path: string) =>
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n` +
        "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n";
      const anonymous = await rawExchange(
        s.port,
        s.caPem,
        head("/exec/default/web/app?command=ls"),
      );
      assert.match(anonymous, /^HTTP\/1\.1 401 Unauthorized\r\n/);
      assert.match(anonymous, /"reason":"Unauthorized"/);
      const cert = {
        cert: await Deno.readTextFile(`${cluster.pkiDir}/apiserver-kubelet-client.crt`),
        key: await Deno.readTextFile(`${cluster.pkiDir}/apiserver-kubelet-client.key`),
      };
      const unknown = await rawExchange(s.port, s.caPem, head("/nope"), cert);
      assert.match(unknown, /^HTTP\/1\.1 404 Not Found\r\n/);
      const noHandler = await rawExchange(s.port, s.caPem, head("/exec/default/web/app"), cert);
      assert.match(noHandler, /^HTTP\/1\.1 501 Not Implemented\r\n/);
      assert.match(noHandler, /no streaming handler/);
    });
  },
});

Deno.test({
  name: "a changed serving certificate file is picked up without a restart",
  ...sanitize,
  async fn() {
    const cluster = await useCluster();
    const first = await cluster.issueServingCert("vk-first", ["127.0.0.1"]);
    const dir = await Deno.makeTempDir({ prefix: "vk-serving-" });
    const files = { certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key` };
    await Deno.copyFile(first.certFile, files.certFile);
    await Deno.copyFile(first.keyFile, files.keyFile);
    const { fileCertificates } = await import("../../../x509/mod.ts");
    const { realClock } = await import("../../../base/clock.ts");
    const { log } = await import("../../../tools/harness/kubelet_api_fakes.ts");
    try {
      await using s = await startClusterServer(cluster, {
        nodeName: "vk-reload",
        certificates: fileCertificates({ ...files, clock: realClock, log, pollIntervalMs: 100 }),
      });
      assert.equal(await servedCommonName(s.port, s.caPem), "vk-first");
      const second = await cluster.issueServingCert("vk-second", ["127.0.0.1"]);
      // Key first, then certificate: in between the pair does not match and is skipped.
      await Deno.copyFile(second.keyFile, files.keyFile);
      await Deno.copyFile(second.certFile, files.certFile);
      let cn = "";
      for (let i = 0; i < 50 && cn !== "vk-second"; i++) {
        await new Promise((r) => setTimeout(r, 100));
        cn = await servedCommonName(s.port, s.caPem);
      }
      assert.equal(cn, "vk-second");
      // Client certificates are still verified with the new context.
      const res = await call(s, "/healthz", {
        cert: {
          certFile: `${cluster.pkiDir}/apiserver-kubelet-client.crt`,
          keyFile: `${cluster.pkiDir}/apiserver-kubelet-client.key`,
        },
      });
      assert.equal(res.status, 200);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** The ALPN protocol the server picks from `offered`. */
async function alpn(port: number, offered: string[], ca: string): Promise<string | null> {
  const conn = await Deno.connectTls({
    hostname: "127.0.0.1",
    port,
    caCerts: [ca],
    alpnProtocols: offered,
  });
  try {
    return (await conn.handshake()).alpnProtocol;
  } finally {
    conn.close();
  }
}

/** The CN of the certificate the server presents. */
function servedCommonName(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: "127.0.0.1",
      port,
      ca,
      checkServerIdentity: () => undefined,
    }, () => {
      const cn = socket.getPeerCertificate().subject?.CN;
      socket.destroy();
      resolve(Array.isArray(cn) ? cn[0] : cn ?? "");
    });
    socket.on("error", reject);
  });
}

/** Sends `request` over TLS and reads until the server closes. */
async function rawExchange(
  port: number,
  ca: string,
  request: string,
  cert?: { cert: string; key: string },
): Promise<string> {
  const conn = await Deno.connectTls({ hostname: "127.0.0.1", port, caCerts: [ca], ...cert });
  try {
    await conn.write(new TextEncoder().encode(request));
    let text = "";
    const buffer = new Uint8Array(16_384);
    const timer = setTimeout(() => conn.close(), 10_000);
    try {
      while (true) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += new TextDecoder().decode(buffer.subarray(0, n));
      }
    } finally {
      clearTimeout(timer);
    }
    return text;
  } finally {
    try {
      conn.close();
    } catch {
      // already closed by the timer
    }
  }
}

Deno.test({
  name: "a serving certificate is obtained through an approved kubelet-serving CSR",
  ...sanitize,
  async fn() {
    const cluster = await useCluster();
    const { csrApiFrom } = await import("../../../core/kubelet_api/mod.ts");
    const { csrCertificate } = await import("../../../x509/mod.ts");
    const { KubeClient } = await import("../../../k8s/mod.ts");
    const { realClock } = await import("../../../base/clock.ts");
    const { log } = await import("../../../tools/harness/kubelet_api_fakes.ts");
    using kube = await KubeClient.fromConfig({ kubeconfig: cluster.kubeconfigPath });
    const nodeName = `vk-csr-${crypto.randomUUID().slice(0, 6)}`;
    const api = csrApiFrom(kube);
    const names: string[] = [];
    const approving: Promise<unknown>[] = [];
    // Approve as an operator would, as soon as the CSR exists.
    const csrApi = {
      ...api,
      async create(...args: Parameters<typeof api.create>) {
        const created = await api.create(...args);
        names.push(created.metadata!.name!);
        approving.push(cluster.kubectl(["certificate", "approve", created.metadata!.name!]));
        return created;
      },
    };
    try {
      await using s = await startClusterServer(cluster, {
        nodeName,
        certificates: csrCertificate({
          csrApi,
          nodeName,
          dnsNames: [nodeName],
          ipAddresses: ["127.0.0.1"],
          clock: realClock,
          log,
        }),
      });
      await Promise.all(approving);
      assert.equal(await servedCommonName(s.port, s.caPem), `system:node:${nodeName}`);
    } finally {
      for (const name of names) {
        await cluster.kubectl(["delete", "csr", name, "--ignore-not-found"]);
      }
    }
  },
});

Deno.test({
  name:
    "with anonymous enabled, a certificate from another CA is 401 and no certificate is anonymous",
  ...sanitize,
  async fn() {
    const cluster = await useCluster();
    await using s = await startClusterServer(cluster, {
      nodeName: `vk-anon-${crypto.randomUUID().slice(0, 6)}`,
      auth: {
        anonymous: true,
        accessReviewer: { review: () => Promise.resolve({ allowed: true }) },
      },
    });
    const dir = await Deno.makeTempDir({ prefix: "vk-other-ca-" });
    try {
      await run(cluster.binary, ["pki", dir]);
      await run(cluster.binary, ["cert", `--ca=${dir}/ca`, `--out=${dir}/rogue`, "--cn=rogue"]);
      const rogue = await call(s, "/healthz", {
        cert: { certFile: `${dir}/rogue.crt`, keyFile: `${dir}/rogue.key` },
      });
      assert.equal(rogue.status, 401, rogue.body);
      const anonymous = await call(s, "/healthz");
      assert.equal(anonymous.status, 200, anonymous.body);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
