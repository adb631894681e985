import assert from "node:assert/strict";
import { HttpClientPool } from "../../k8s/transport.ts";
import { createSelfSignedCertificate, generateKeyPair, privateKeyPem } from "../../x509/encode.ts";

const config = { server: "https://127.0.0.1:6443", namespace: "default", source: "test" };

Deno.test("watches get connections apart from ordinary requests, reused per use", () => {
  const pool = new HttpClientPool(config);
  const request = pool.clientFor(undefined);
  const watch = pool.clientFor(undefined, "watch");
  assert.notEqual(watch, request, "a busy watch must not share a connection with status writes");
  assert.equal(pool.clientFor(undefined, "request"), request);
  assert.equal(pool.clientFor(undefined, "watch"), watch);
  pool.close();
  assert.throws(() => pool.clientFor(undefined), /closed/);
});

/** A client certificate with its key (self-signed; only its shape matters here). */
async function certificate(name: string) {
  const keys = await generateKeyPair();
  const now = Date.now();
  const cert = await createSelfSignedCertificate(keys, { commonName: name }, {
    notBefore: new Date(now),
    notAfter: new Date(now + 3_600_000),
  });
  return { cert, key: await privateKeyPem(keys) };
}

Deno.test("a rotated certificate gets new connections; the old ones close after their last stream", async () => {
  const pool = new HttpClientPool(config);
  const certs = await Promise.all(["one", "two", "three"].map(certificate));
  const watch = pool.acquire(certs[0], "watch");
  const request = pool.acquire(certs[0], "request");
  request.release();
  const rotated = pool.acquire(certs[1], "watch");
  assert.notEqual(rotated.client, watch.client, "new requests present the new certificate");
  assert.equal(pool.acquire(certs[1], "request").client, pool.clientFor(certs[1]));
  // The watch opened with the first certificate is still running: its client stays open.
  assert.equal(pool.openClients, 3);
  watch.release();
  assert.equal(pool.openClients, 2, "the old watch client closes once its stream ended");
  rotated.release();
  pool.clientFor(certs[2], "watch");
  assert.equal(pool.openClients, 2, "an idle old client closes at once");
  pool.close();
});
