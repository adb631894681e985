import assert from "node:assert/strict";
import type { CertificateSigningRequest } from "kubernetes-types/certificates/v1.d.ts";
import { type CsrApi, csrCertificate, type KeyPair } from "../../x509/mod.ts";
import {
  type CertificateStore,
  defaultCertDirs,
  fileCertificateStore,
} from "../../x509/certificate_store.ts";
import { storedPairProblem } from "../../x509/csr_certificate.ts";
import { createSelfSignedCertificate, generateKeyPair, privateKeyPem } from "../../x509/encode.ts";
import { FakeClock, flush } from "../fakes/clock.ts";
import { log } from "../../tools/harness/kubelet_api_fakes.ts";

const NAMES = { nodeName: "vk-1", dnsNames: ["vk-1"], ipAddresses: ["127.0.0.1"] };
const HOUR = 3_600_000;

/** A pair as the kubelet-serving signer would issue it for `NAMES` (or other names). */
async function issued(
  from: number,
  lifetimeMs: number,
  names = NAMES,
  keys?: CryptoKeyPair,
): Promise<KeyPair> {
  keys ??= await generateKeyPair();
  const certPem = await createSelfSignedCertificate(keys, {
    commonName: `system:node:${names.nodeName}`,
    organizations: ["system:nodes"],
    dnsNames: names.dnsNames,
    ipAddresses: names.ipAddresses,
  }, { notBefore: new Date(from), notAfter: new Date(from + lifetimeMs) });
  return { certPem, keyPem: await privateKeyPem(keys) };
}

/**
 * Issues a certificate for every CSR, as if an admin approved it at once, for the key of the
 * request (it makes the keys, so it can certify them without parsing the CSR).
 */
class FakeCsrApi implements CsrApi {
  created: CertificateSigningRequest[] = [];
  #keys?: CryptoKeyPair;
  constructor(private clock: FakeClock, private lifetimeMs: number) {}
  generateKeys = async () => this.#keys = await generateKeyPair();
  create(csr: CertificateSigningRequest) {
    this.created.push(csr);
    return Promise.resolve({ ...csr, metadata: { name: `csr-${this.created.length}` } });
  }
  async waitForCertificate() {
    return (await issued(this.clock.now(), this.lifetimeMs, NAMES, this.#keys)).certPem;
  }
}

/** Runs a CSR certificate source until `until` holds; returns the pairs it served. */
async function serve(
  options: { clock: FakeClock; api: FakeCsrApi; store: CertificateStore },
  until: (pairs: KeyPair[]) => boolean,
  then?: (pairs: KeyPair[]) => Promise<void>,
): Promise<KeyPair[]> {
  const pairs: KeyPair[] = [];
  const stop = new AbortController();
  const running = csrCertificate({
    ...NAMES,
    csrApi: options.api,
    generateKeys: options.api.generateKeys,
    clock: options.clock,
    log,
    store: options.store,
    renewFraction: () => 0.8,
  }).run((pair) => pairs.push(pair), stop.signal);
  try {
    for (let i = 0; i < 200 && !until(pairs); i++) await flush();
    await then?.(pairs);
  } finally {
    stop.abort();
    await running;
  }
  return pairs;
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "vk-pki-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the issued certificate is stored 0600 and a restart serves it without a new CSR", async () => {
  await withDir(async (dir) => {
    const clock = new FakeClock();
    const api = new FakeCsrApi(clock, 24 * HOUR);
    const store = () => fileCertificateStore({ dirs: [`${dir}/pki`], nodeName: "vk-1" });
    const first = await serve({ clock, api, store: store() }, (p) => p.length === 1);
    assert.equal(api.created.length, 1);
    const path = `${dir}/pki/vk-1-server-current.pem`;
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(`${dir}/pki`)).mode! & 0o777, 0o700);
    const text = await Deno.readTextFile(path);
    assert.ok(text.startsWith("-----BEGIN CERTIFICATE-----\n"));
    assert.ok(text.includes("PRIVATE KEY-----\n"));
    assert.deepEqual([...Deno.readDirSync(`${dir}/pki`)].map((e) => e.name), [
      "vk-1-server-current.pem",
    ], "no temporary file left behind");

    // A restart an hour later: the same pair at once, and no CSR for an admin to approve.
    await clock.advance(HOUR);
    const second = await serve({ clock, api, store: store() }, (p) => p.length === 1);
    assert.equal(api.created.length, 1);
    assert.equal(second[0].certPem, first[0].certPem);
    assert.equal(second[0].keyPem, first[0].keyPem);
  });
});

Deno.test("a stored certificate past its renewal point is served while a new one is requested and stored", async () => {
  await withDir(async (dir) => {
    const clock = new FakeClock();
    const api = new FakeCsrApi(clock, 10 * HOUR);
    const store = fileCertificateStore({ dirs: [dir], nodeName: "vk-1" });
    const old = await issued(clock.now() - 9 * HOUR, 10 * HOUR); // 90 % through, still valid
    await store.save(old);
    const pairs = await serve({ clock, api, store }, (p) => p.length === 2);
    assert.equal(pairs[0].certPem, old.certPem, "the old one serves while the CSR is pending");
    assert.equal(api.created.length, 1);
    assert.notEqual(pairs[1].certPem, old.certPem);
    assert.equal((await store.load())?.certPem, pairs[1].certPem);
  });
});

Deno.test("a stored certificate that is expired, for another node or lacks an address is not reused", async () => {
  const clock = new FakeClock();
  const now = clock.now();
  const cases: [Promise<KeyPair>, RegExp][] = [
    [issued(now - 2 * HOUR, HOUR), /expired/],
    [issued(now, HOUR, { ...NAMES, nodeName: "vk-2" }), /not node vk-1/],
    [issued(now, HOUR, { ...NAMES, ipAddresses: ["10.0.0.9"] }), /does not name 127\.0\.0\.1/],
  ];
  for (const [pair, problem] of cases) {
    await withDir(async (dir) => {
      const store = fileCertificateStore({ dirs: [dir], nodeName: "vk-1" });
      const stale = await pair;
      assert.match(storedPairProblem(stale, NAMES, now) ?? "usable", problem);
      await store.save(stale);
      const api = new FakeCsrApi(clock, HOUR);
      const served = await serve({ clock, api, store }, (p) => p.length === 1);
      assert.equal(api.created.length, 1, "a new CSR");
      assert.notEqual(served[0].certPem, stale.certPem, "the stale pair is never served");
      assert.equal((await store.load())?.certPem, served[0].certPem, "and is replaced");
    });
  }
  assert.equal(storedPairProblem(await issued(now, HOUR), NAMES, now), undefined);
});

Deno.test("an unreadable stored file leads to a new CSR, not a failure", async () => {
  await withDir(async (dir) => {
    const clock = new FakeClock();
    await Deno.writeTextFile(`${dir}/vk-1-server-current.pem`, "half a file");
    const api = new FakeCsrApi(clock, HOUR);
    const store = fileCertificateStore({ dirs: [dir], nodeName: "vk-1" });
    const served = await serve({ clock, api, store }, (p) => p.length === 1);
    assert.equal(served.length, 1);
    assert.equal(api.created.length, 1);
  });
});

Deno.test("the store falls back to the next directory when one cannot be used", async () => {
  await withDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/not-a-dir`, "");
    const dirs = [`${dir}/not-a-dir/pki`, `${dir}/fallback`];
    const pair = await issued(Date.now(), HOUR);
    const store = fileCertificateStore({ dirs, nodeName: "vk-1" });
    await store.save(pair);
    assert.equal(store.path, `${dir}/fallback/vk-1-server-current.pem`);
    const again = fileCertificateStore({ dirs, nodeName: "vk-1" });
    assert.deepEqual(await again.load(), pair);
    // Another node on the same host keeps its own file.
    const other = fileCertificateStore({ dirs, nodeName: "vk-2" });
    assert.equal(await other.load(), undefined);
  });
});

Deno.test("default certificate directories: systemd's state directory, /var/lib, then home", () => {
  assert.deepEqual(defaultCertDirs({ STATE_DIRECTORY: "/var/lib/vkubelet", HOME: "/root" }), [
    "/var/lib/vkubelet/pki",
    "/var/lib/vkubelet/pki",
    "/root/.local/state/vkubelet/pki",
  ]);
  assert.deepEqual(defaultCertDirs({ HOME: "/home/ann", XDG_STATE_HOME: "/state" }), [
    "/var/lib/vkubelet/pki",
    "/state/vkubelet/pki",
  ]);
  assert.deepEqual(defaultCertDirs({}), ["/var/lib/vkubelet/pki"]);
});
