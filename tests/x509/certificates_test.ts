import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import type { CertificateSigningRequest } from "kubernetes-types/certificates/v1.d.ts";
import {
  checkPair,
  type CsrApi,
  csrCertificate,
  fileCertificates,
  type KeyPair,
  selfSignedCertificate,
} from "../../x509/mod.ts";
import { integer, oid, time } from "../../x509/der.ts";
import {
  createSelfSignedCertificate,
  generateKeyPair,
  ipBytes,
  privateKeyPem,
} from "../../x509/encode.ts";
import { FakeClock, flush } from "../fakes/clock.ts";
import { log } from "../../tools/harness/kubelet_api_fakes.ts";

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

Deno.test("the DER encoder matches X.690 examples", () => {
  assert.equal(hex(integer(0)), "020100");
  assert.equal(hex(integer(128)), "02020080");
  assert.equal(hex(integer(Uint8Array.of(0, 0, 0xff))), "020200ff");
  assert.equal(hex(oid("1.2.840.10045.4.3.2")), "06082a8648ce3d040302");
  assert.equal(
    hex(time(new Date(Date.UTC(2026, 0, 2, 3, 4, 5)))),
    "170d3236303130323033303430355a",
  );
  assert.equal(hex(time(new Date(Date.UTC(2050, 0, 1)))).slice(0, 4), "180f");
  assert.equal(hex(ipBytes("::1")), "00000000000000000000000000000001");
  assert.equal(hex(ipBytes("127.0.0.1")), "7f000001");
  assert.throws(() => ipBytes("300.1.1.1"), TypeError);
});

Deno.test("a self-signed certificate carries the node identity and SANs", async () => {
  const clock = new FakeClock();
  const pairs: KeyPair[] = [];
  const stop = new AbortController();
  const running = selfSignedCertificate({
    nodeName: "vk-1",
    dnsNames: ["vk-1"],
    ipAddresses: ["127.0.0.1"],
    clock,
    log,
  }).run((pair) => {
    pairs.push(pair);
    stop.abort();
  }, stop.signal);
  await running;
  const cert = new X509Certificate(pairs[0].certPem);
  assert.equal(cert.subject, "O=system:nodes\nCN=system:node:vk-1");
  assert.equal(cert.subjectAltName, "DNS:vk-1, IP Address:127.0.0.1");
  assert.ok(cert.verify(cert.publicKey), "self-signature verifies");
  checkPair(pairs[0], "test");
});

async function makePair(cn: string, notBefore: number, lifetimeMs: number): Promise<KeyPair> {
  const keys = await generateKeyPair();
  const certPem = await createSelfSignedCertificate(keys, {
    commonName: cn,
    ipAddresses: ["127.0.0.1"],
  }, {
    notBefore: new Date(notBefore),
    notAfter: new Date(notBefore + lifetimeMs),
  });
  return { certPem, keyPem: await privateKeyPem(keys) };
}

Deno.test("certificate files are reloaded when they change, and a mismatched pair is skipped", async () => {
  const clock = new FakeClock();
  const dir = await Deno.makeTempDir({ prefix: "vk-files-" });
  const files = { certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key` };
  const write = async (pair: KeyPair) => {
    await Deno.writeTextFile(files.certFile, pair.certPem);
    await Deno.writeTextFile(files.keyFile, pair.keyPem);
  };
  const a = await makePair("a", clock.now(), 3600_000);
  const b = await makePair("b", clock.now(), 3600_000);
  await write(a);
  const seen: string[] = [];
  const stop = new AbortController();
  const running = fileCertificates({ ...files, clock, log, pollIntervalMs: 1_000 }).run(
    (pair) => seen.push(new X509Certificate(pair.certPem).subject),
    stop.signal,
  );
  try {
    while (seen.length < 1) await flush();
    await Deno.writeTextFile(files.certFile, b.certPem); // key still a's: not a pair yet
    await clock.advance(1_000);
    await flush();
    assert.deepEqual(seen, ["CN=a"]);
    await Deno.writeTextFile(files.keyFile, b.keyPem);
    await clock.advance(1_000);
    for (let i = 0; i < 20 && seen.length < 2; i++) await flush();
    assert.deepEqual(seen, ["CN=a", "CN=b"]);
  } finally {
    stop.abort();
    await running;
    await Deno.remove(dir, { recursive: true });
  }
});

/** Signs every CSR with a fresh self-signed certificate valid for `lifetimeMs`. */
class FakeCsrApi implements CsrApi {
  created: CertificateSigningRequest[] = [];
  constructor(private clock: FakeClock, private lifetimeMs: number) {}
  create(csr: CertificateSigningRequest) {
    this.created.push(csr);
    return Promise.resolve({ ...csr, metadata: { name: `csr-${this.created.length}` } });
  }
  async waitForCertificate() {
    return (await makePair("system:node:vk-1", this.clock.now(), this.lifetimeMs)).certPem;
  }
}

Deno.test("a CSR-issued certificate is requested with the kubelet-serving signer and renewed", async () => {
  const clock = new FakeClock();
  const api = new FakeCsrApi(clock, 100_000);
  const pairs: KeyPair[] = [];
  const stop = new AbortController();
  const running = csrCertificate({
    csrApi: api,
    nodeName: "vk-1",
    dnsNames: ["vk-1"],
    ipAddresses: ["127.0.0.1"],
    clock,
    log,
    renewFraction: () => 0.8,
  }).run((pair) => pairs.push(pair), stop.signal);
  try {
    for (let i = 0; i < 50 && pairs.length < 1; i++) await flush();
    assert.equal(pairs.length, 1);
    const spec = api.created[0].spec;
    assert.equal(spec.signerName, "kubernetes.io/kubelet-serving");
    assert.deepEqual(spec.usages, ["digital signature", "server auth"]);
    assert.match(atob(spec.request), /^-----BEGIN CERTIFICATE REQUEST-----\n/);
    await clock.advance(79_000);
    assert.equal(pairs.length, 1, "not renewed before 80 % of the lifetime");
    await clock.advance(2_000);
    for (let i = 0; i < 50 && pairs.length < 2; i++) await flush();
    assert.equal(pairs.length, 2);
    assert.notEqual(pairs[1].keyPem, pairs[0].keyPem, "a new key for each certificate");
  } finally {
    stop.abort();
    await running;
  }
});
