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

Deno.test("a rotated certificate gets new connections; one older client per use stays open", async () => {
  const pool = new HttpClientPool(config);
  const certs = await Promise.all(["one", "two", "three"].map(certificate));
  const cert = (n: number) => certs[n - 1];
  const clients = [1, 2, 3].map((n) => pool.clientFor(cert(n), "watch"));
  assert.equal(new Set(clients).size, 3);
  assert.equal(pool.clientFor(cert(3), "watch"), clients[2]);
  assert.equal(pool.clientFor(cert(2), "watch"), clients[1], "the previous one still serves");
  assert.notEqual(pool.clientFor(cert(1), "watch"), clients[0], "the oldest was closed");
  pool.close();
});
