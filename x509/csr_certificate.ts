/**
 * A serving certificate requested from the cluster, as the kubelet's
 * `--rotate-server-certificates` does (kubernetes/kubernetes pkg/kubelet/certificate
 * kubelet.go `NewKubeletServerCertificateManager`, client-go util/certificate
 * certificate_manager.go): a new P-256 key, a CertificateSigningRequest with signer
 * `kubernetes.io/kubelet-serving` for CN `system:node:<node>`, O `system:nodes` and the node's
 * addresses as SANs, used once approved and issued, and renewed at a random point between 70 %
 * and 90 % of its lifetime. Someone (an operator, or an approver controller) must approve it.
 *
 * The issued certificate and its key are kept in a {@link CertificateStore} (`--cert-dir`, as
 * the kubelet keeps `kubelet-server-current.pem`), so that a restart serves them again instead of
 * filing a CSR an admin must approve once more. A stored pair is reused while it is valid and
 * still names this node and its addresses; past its renewal point it is served while a new one
 * is requested.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { checkPair } from "./certificate_source.ts";
import type { Clock } from "../base/clock.ts";
import type { Logger } from "../base/log.ts";
import type { CertificateSource, KeyPair } from "./certificate_source.ts";
import type { CertificateSigningRequest } from "kubernetes-types/certificates/v1.d.ts";
import { createCsr, type EcKeyPair, generateKeyPair, privateKeyPem } from "./encode.ts";
import type { CertificateStore } from "./certificate_store.ts";

/** The CertificateSigningRequest calls a serving-certificate requester needs. */
export interface CsrApi {
  create(
    csr: CertificateSigningRequest,
    options: { signal?: AbortSignal },
  ): Promise<CertificateSigningRequest>;
  /** Resolves with the issued PEM certificate; rejects if denied, failed or deleted. */
  waitForCertificate(name: string, options: { signal?: AbortSignal }): Promise<string>;
}

/** Options for {@link csrCertificate}. */
export interface CsrCertificateOptions {
  csrApi: CsrApi;
  nodeName: string;
  dnsNames: string[];
  ipAddresses: string[];
  clock: Clock;
  log: Logger;
  /** Asked-for lifetime (`spec.expirationSeconds`); the signer may shorten it. */
  expirationSeconds?: number;
  /** Wait before asking again after a failure; default 30 s. */
  retryDelayMs?: number;
  /** Where in the lifetime to renew, as a fraction; default a random value in [0.7, 0.9). */
  renewFraction?: () => number;
  /** Keeps the issued pair across restarts; none keeps it in memory only. */
  store?: CertificateStore;
  /** Makes the key of each request; replaced in tests whose fake signer needs the key. */
  generateKeys?: () => Promise<EcKeyPair>;
}

/** Requests, then keeps renewing, the serving certificate; see the module doc. */
export function csrCertificate(options: CsrCertificateOptions): CertificateSource {
  return {
    async run(onKeyPair, signal) {
      const { log, clock } = options;
      let pair = await loadStoredPair(options);
      if (pair) onKeyPair(pair);
      while (!signal.aborted) {
        if (pair) {
          const renewAt = renewalTime(
            pair.certPem,
            options.renewFraction?.() ?? 0.7 + 0.2 * Math.random(),
          );
          log.info("serving certificate valid; renewing at {at}", {
            at: new Date(renewAt).toISOString(),
          });
          if (!await sleepUntil(clock, renewAt, signal)) return;
        }
        let next: KeyPair;
        try {
          next = await requestServingCertificate(options, signal);
        } catch (err) {
          if (signal.aborted) return;
          log.warn("serving certificate request failed, retrying: {err}", { err });
          const retryAt = clock.now() + (options.retryDelayMs ?? 30_000);
          if (!await sleepUntil(clock, retryAt, signal)) return;
          continue;
        }
        await saveIssuedPair(options, next);
        onKeyPair(next);
        pair = next;
      }
    },
  };
}

/** The stored pair if it can be served now for these names; logs why not otherwise. */
async function loadStoredPair(options: CsrCertificateOptions): Promise<KeyPair | undefined> {
  const { store, log } = options;
  if (!store) return undefined;
  let pair: KeyPair | undefined;
  try {
    pair = await store.load();
  } catch (err) {
    log.warn("cannot read the stored serving certificate {path}; requesting a new one: {err}", {
      path: store.path,
      err,
    });
    return undefined;
  }
  if (!pair) return undefined;
  const problem = storedPairProblem(pair, options, options.clock.now());
  if (problem) {
    log.info("not reusing the stored serving certificate {path}: {problem}", {
      path: store.path,
      problem,
    });
    return undefined;
  }
  log.info("reusing the serving certificate stored in {path}", { path: store.path });
  return pair;
}

async function saveIssuedPair(options: CsrCertificateOptions, pair: KeyPair): Promise<void> {
  if (!options.store) return;
  try {
    await options.store.save(pair);
  } catch (err) {
    // Serving matters more than keeping it; the next start asks for a new one.
    options.log.warn(
      "cannot store the serving certificate in {path}, so a restart files a new CSR: {err}; " +
        "make --cert-dir writable",
      { path: options.store.path, err },
    );
  }
}

/**
 * Why a stored pair cannot be served now (undefined if it can): it must parse, its key must
 * belong to it, it must be valid at `nowMs`, and it must be for this node and name every DNS
 * name and IP address the node would ask for (client-go's certificate manager likewise asks
 * again when its template changes).
 */
export function storedPairProblem(
  pair: KeyPair,
  names: Pick<CsrCertificateOptions, "nodeName" | "dnsNames" | "ipAddresses">,
  nowMs: number,
): string | undefined {
  let cert: X509Certificate;
  try {
    checkPair(pair, "the stored file");
    cert = new X509Certificate(pair.certPem);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  const notAfter = Date.parse(cert.validTo);
  if (nowMs < Date.parse(cert.validFrom)) return `it is not valid before ${cert.validFrom}`;
  if (nowMs >= notAfter) return `it expired at ${new Date(notAfter).toISOString()}`;
  const subject = cert.subject.split("\n");
  if (!subject.includes(`CN=system:node:${names.nodeName}`)) {
    return `it is for ${subject.join(", ")}, not node ${names.nodeName}`;
  }
  const sans = new Set((cert.subjectAltName ?? "").split(", "));
  const missing = [
    ...names.dnsNames.filter((n) => !sans.has(`DNS:${n}`)),
    ...names.ipAddresses.filter((ip) => !sans.has(`IP Address:${ip}`)),
  ];
  if (missing.length > 0) return `it does not name ${missing.join(", ")}`;
  return undefined;
}

/** The time at `fraction` of the certificate's lifetime. */
export function renewalTime(certPem: string, fraction: number): number {
  const cert = new X509Certificate(certPem);
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return from + (to - from) * fraction;
}

/** One round: key, CSR object, wait for the signed certificate. */
export async function requestServingCertificate(
  options: CsrCertificateOptions,
  signal: AbortSignal,
): Promise<KeyPair> {
  const keys = await (options.generateKeys ?? generateKeyPair)();
  const request = await createCsr(keys, {
    commonName: `system:node:${options.nodeName}`,
    organizations: ["system:nodes"],
    dnsNames: options.dnsNames,
    ipAddresses: options.ipAddresses,
  });
  const created = await options.csrApi.create({
    metadata: { generateName: `csr-${options.nodeName}-` },
    spec: {
      request: btoa(request),
      signerName: "kubernetes.io/kubelet-serving",
      // An ECDSA key signs; "key encipherment" is for RSA only.
      usages: ["digital signature", "server auth"],
      ...(options.expirationSeconds ? { expirationSeconds: options.expirationSeconds } : {}),
    },
  }, { signal });
  const name = created.metadata?.name ?? "";
  options.log.info(
    "waiting for CertificateSigningRequest {name} to be approved (kubectl certificate approve {name})",
    { name },
  );
  const certPem = await options.csrApi.waitForCertificate(name, { signal });
  return { certPem, keyPem: await privateKeyPem(keys) };
}

/**
 * Sleeps until `at`, in steps of at most an hour: timers longer than 2^31 ms (~24.8 days) fire
 * at once, and certificates live for months. False when `signal` aborted.
 */
async function sleepUntil(clock: Clock, at: number, signal: AbortSignal): Promise<boolean> {
  try {
    for (let left = at - clock.now(); left > 0; left = at - clock.now()) {
      await clock.sleep(Math.min(left, 3_600_000), signal);
    }
    return !signal.aborted;
  } catch {
    return false;
  }
}
