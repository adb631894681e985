import assert from "node:assert/strict";
import type { CertificateSigningRequest } from "kubernetes-types/certificates/v1.d.ts";
import { configure, type LogRecord, reset } from "@logtape/logtape";
import { getLogger } from "../../base/log.ts";
import {
  type CertificateSource,
  type CsrApi,
  csrCertificate,
  type KeyPair,
  sharedCertificates,
} from "../../x509/mod.ts";
import { createSelfSignedCertificate, generateKeyPair, privateKeyPem } from "../../x509/encode.ts";
import { FakeClock, flush } from "../fakes/clock.ts";

async function pairFor(cn: string, nowMs: number): Promise<KeyPair> {
  const keys = await generateKeyPair();
  const certPem = await createSelfSignedCertificate(keys, { commonName: cn }, {
    notBefore: new Date(nowMs),
    notAfter: new Date(nowMs + 3_600_000),
  });
  return { certPem, keyPem: await privateKeyPem(keys) };
}

function text(r: LogRecord): string {
  return r.message.map((m) => typeof m === "string" ? m : String(m)).join("");
}

async function capture<T>(fn: (records: LogRecord[]) => Promise<T>): Promise<T> {
  const records: LogRecord[] = [];
  await configure({
    reset: true,
    sinks: { memory: (r) => records.push(r) },
    loggers: [
      { category: ["test"], lowestLevel: "info", sinks: ["memory"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["memory"] },
    ],
  });
  try {
    return await fn(records);
  } finally {
    await reset();
  }
}

Deno.test("a node client CSR uses the kubelet client signer, and a pending one is logged once a minute by name", async () => {
  await capture(async (records) => {
    const clock = new FakeClock();
    const created: CertificateSigningRequest[] = [];
    let sign: ((pem: string) => void) | undefined;
    const api: CsrApi = {
      create: (csr) => {
        created.push(csr);
        return Promise.resolve({ ...csr, metadata: { name: "csr-vk-1-abcde" } });
      },
      waitForCertificate: () => new Promise((resolve) => sign = resolve),
    };
    const pairs: KeyPair[] = [];
    const stop = new AbortController();
    const running = csrCertificate({
      kind: "client",
      csrApi: api,
      nodeName: "vk-1",
      dnsNames: ["ignored"],
      ipAddresses: ["127.0.0.1"],
      clock,
      log: getLogger(["test"]),
    }).run((p) => pairs.push(p), stop.signal);
    try {
      for (let i = 0; i < 50 && !sign; i++) await flush();
      assert.equal(created[0].spec.signerName, "kubernetes.io/kube-apiserver-client-kubelet");
      assert.deepEqual(created[0].spec.usages, ["digital signature", "client auth"]);
      const pending = () => records.filter((r) => /still pending/.test(text(r)));
      await clock.advance(59_000);
      assert.equal(pending().length, 0);
      await clock.advance(2_000);
      await clock.advance(60_000);
      assert.equal(pending().length, 2, "once a minute");
      assert.match(
        text(pending()[0]),
        /csr-vk-1-abcde.*kubectl certificate approve csr-vk-1-abcde/,
      );
      sign!((await pairFor("system:node:vk-1", clock.now())).certPem);
      for (let i = 0; i < 50 && pairs.length < 1; i++) await flush();
      assert.equal(pairs.length, 1);
    } finally {
      stop.abort();
      await running;
    }
  });
});

Deno.test("a denied CSR is logged with its reason and asked again with back-off, never ending the loop", async () => {
  await capture(async (records) => {
    const clock = new FakeClock();
    let attempts = 0;
    const api: CsrApi = {
      create: (csr) => Promise.resolve({ ...csr, metadata: { name: `csr-vk-1-${++attempts}` } }),
      waitForCertificate: (name) =>
        Promise.reject(new Error(`CertificateSigningRequest ${name} was denied: not today`)),
    };
    const stop = new AbortController();
    const running = csrCertificate({
      kind: "client",
      csrApi: api,
      nodeName: "vk-1",
      dnsNames: [],
      ipAddresses: [],
      clock,
      log: getLogger(["test"]),
      retryDelayMs: 2_000,
    }).run(() => {}, stop.signal);
    try {
      for (let i = 0; i < 50 && attempts < 1; i++) await flush();
      assert.equal(attempts, 1);
      await clock.advance(2_300);
      for (let i = 0; i < 50 && attempts < 2; i++) await flush();
      assert.equal(attempts, 2, "asked again after about 2 s");
      await clock.advance(2_300);
      for (let i = 0; i < 20; i++) await flush();
      assert.equal(attempts, 2, "the second wait is longer (4 s)");
      const failure = records.find((r) => /request failed; asking again/.test(text(r)))!;
      assert.match(text(failure), /csr-vk-1-1 was denied: not today/);
    } finally {
      stop.abort();
      await running;
    }
  });
});

Deno.test("a shared serving certificate is obtained once at start-up and handed at once to servers started later", async () => {
  let runs = 0;
  const pair = await pairFor("system:node:vk-1", Date.now());
  const source: CertificateSource = {
    async run(onKeyPair, signal) {
      runs++;
      onKeyPair(pair);
      await new Promise((r) => signal.addEventListener("abort", r, { once: true }));
    },
  };
  const process = new AbortController();
  const shared = sharedCertificates(source, process.signal);
  // A takeover later: the term's server gets the pair without a new request.
  for (let term = 0; term < 2; term++) {
    const got: KeyPair[] = [];
    const stopTerm = new AbortController();
    const serving = shared.run((p) => got.push(p), stopTerm.signal);
    assert.deepEqual(got, [pair]);
    stopTerm.abort();
    await serving;
  }
  assert.equal(runs, 1);
  process.abort();
  await shared.done;
});
