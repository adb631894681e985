/**
 * https to interLink with an extra CA and mutual TLS, as interLink's virtual kubelet's
 * `TLS.CertFile`/`KeyFile`: against `openssl s_server` on 127.0.0.1 that demands a client
 * certificate from the test CA. Without one, or with one from another CA, the ping fails naming
 * the endpoint; a valid one written over the same files is used at the next call, without a
 * restart. Half a pair, or a client certificate for an http url, is refused at config time.
 */
import assert from "node:assert/strict";
import { getLogger } from "../../../base/log.ts";
import { FakeClock } from "../../../base/fake_clock.ts";
import { createProvider, parseInterlinkConfig } from "../../../providers/interlink/mod.ts";
import { freePort } from "../../../tools/cluster/ports.ts";
import { eventually } from "../../../tools/harness/wait.ts";

async function openssl(dir: string, args: string[]): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd: dir, stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`openssl ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** A CA (`<ca>.pem`, `<ca>.key`) and, signed by it, a certificate `<name>.pem`/`.key`. */
async function issue(dir: string, ca: string, name: string, ext: string): Promise<void> {
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  try {
    await Deno.stat(`${dir}/${ca}.pem`);
  } catch {
    await openssl(dir, [
      "req",
      "-x509",
      ...key,
      "-keyout",
      `${ca}.key`,
      "-out",
      `${ca}.pem`,
      "-days",
      "1",
      "-subj",
      `/CN=${ca}`,
    ]);
  }
  await Deno.writeTextFile(`${dir}/${name}.ext`, `${ext}\n`);
  await openssl(dir, [
    "req",
    ...key,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/CN=${name}`,
  ]);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.pem`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.pem`,
    "-days",
    "1",
    "-extfile",
    `${name}.ext`,
  ]);
}

Deno.test("mutual TLS: the client certificate is presented, and a renewed one is read again", async () => {
  const dir = await Deno.makeTempDir();
  await issue(dir, "ca", "server", "subjectAltName=IP:127.0.0.1");
  await issue(dir, "ca", "client", "extendedKeyUsage=clientAuth");
  await issue(dir, "other-ca", "stranger", "extendedKeyUsage=clientAuth");
  const port = freePort();
  const server = new Deno.Command("openssl", {
    args: [
      "s_server",
      "-accept",
      `127.0.0.1:${port}`,
      "-cert",
      "server.pem",
      "-key",
      "server.key",
      "-CAfile",
      "ca.pem",
      "-Verify",
      "1",
      "-verify_return_error",
      "-www",
    ],
    cwd: dir,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const stop = new AbortController();
  const url = `https://127.0.0.1:${port}`;
  const provider = (extra: Record<string, string>) =>
    createProvider({ target: "plugin", url, caFile: `${dir}/ca.pem`, ...extra }, {
      nodeName: "vk-mtls",
      log: getLogger(["test"]),
      clock: new FakeClock(),
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: stop.signal,
    });
  const noCert = provider({});
  await Deno.copyFile(`${dir}/stranger.pem`, `${dir}/tls.crt`);
  await Deno.copyFile(`${dir}/stranger.key`, `${dir}/tls.key`);
  const mtls = provider({ certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key` });
  try {
    // The server is up once it answers a TLS handshake (refused without a certificate).
    const refused = await eventually("openssl s_server to listen", async () => {
      const err = await noCert.ping({}).then(() => undefined, (e: Error) => e);
      return err && !/ECONNREFUSED|connection refused/i.test(err.message) ? err : undefined;
    }, 20_000);
    assert.match(refused.message, new RegExp(`${url} does not answer GET /status \\(ping\\)`));
    const stranger = await mtls.ping({}).then(() => undefined, (e: Error) => e);
    assert.ok(stranger, "a client certificate from another CA is refused");
    // The certificate is renewed in place, as cert-manager does: the next call presents it.
    await Deno.copyFile(`${dir}/client.pem`, `${dir}/tls.crt`);
    await Deno.copyFile(`${dir}/client.key`, `${dir}/tls.key`);
    await mtls.ping({});
  } finally {
    stop.abort();
    await noCert.close?.();
    await mtls.close?.();
    server.kill("SIGTERM");
    await server.status;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mutual TLS needs both files and an https url", () => {
  const half = parseInterlinkConfig({
    target: "plugin",
    url: "https://127.0.0.1:3000",
    certFile: "/etc/interlink/tls.crt",
  });
  assert.ok(!half.ok);
  assert.match(half.errors.join("\n"), /keyFile.*is needed with certFile/);
  const plain = parseInterlinkConfig({
    target: "plugin",
    url: "http://127.0.0.1:3000",
    certFile: "/etc/interlink/tls.crt",
    keyFile: "/etc/interlink/tls.key",
  });
  assert.ok(!plain.ok);
  assert.match(plain.errors.join("\n"), /certFile.*needs an https:\/\/ url/);
});
