/**
 * Where the kubelet API's serving certificate comes from: files that are reloaded when they
 * change (`--tls-cert-file`/`--tls-private-key-file`), or a self-signed certificate made at
 * start-up (only when asked for). The third source, a CertificateSigningRequest, is in
 * `./csr_certificate.ts`. A source calls back with every key pair it has, the first one
 * included; the server starts listening after the first.
 * @module
 */
import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import type { Clock } from "../base/clock.ts";
import type { Logger } from "../base/log.ts";
import { createSelfSignedCertificate, generateKeyPair, privateKeyPem } from "./encode.ts";

/** A PEM certificate chain and its private key. */
export interface KeyPair {
  certPem: string;
  keyPem: string;
}

/** A serving-certificate source; `run` resolves after `signal` aborts. */
export interface CertificateSource {
  run(onKeyPair: (pair: KeyPair) => void, signal: AbortSignal): Promise<void>;
}

/** Options for {@link fileCertificates}. */
export interface FileCertificateOptions {
  certFile: string;
  keyFile: string;
  clock: Clock;
  log: Logger;
  /** How often the files are read to notice a change; default 10 s. */
  pollIntervalMs?: number;
}

/** Serves the pair in two files and picks up new contents (e.g. from cert-manager). */
export function fileCertificates(options: FileCertificateOptions): CertificateSource {
  return {
    async run(onKeyPair, signal) {
      let current = await readPair(options);
      checkPair(current, options.certFile);
      onKeyPair(current);
      while (!signal.aborted) {
        try {
          await options.clock.sleep(options.pollIntervalMs ?? 10_000, signal);
        } catch {
          return;
        }
        try {
          const next = await readPair(options);
          if (next.certPem === current.certPem && next.keyPem === current.keyPem) continue;
          checkPair(next, options.certFile);
          current = next;
          options.log.info("serving certificate reloaded from {file}", { file: options.certFile });
          onKeyPair(current);
        } catch (err) {
          // Half-written files during a rotation: keep serving the old pair, try again later.
          options.log.warn("serving certificate not reloaded: {err}", { err });
        }
      }
    },
  };
}

async function readPair(options: FileCertificateOptions): Promise<KeyPair> {
  return {
    certPem: await Deno.readTextFile(options.certFile),
    keyPem: await Deno.readTextFile(options.keyFile),
  };
}

/**
 * Throws unless `pair` holds a parseable certificate and a parseable private key that belongs
 * to it. `source` names where they came from (a file, or the option of each).
 */
export function checkPair(pair: KeyPair, source: string | { cert: string; key: string }): void {
  const names = typeof source === "string" ? { cert: source, key: source } : source;
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.certPem);
  } catch (err) {
    throw new TypeError(`${names.cert} does not hold a PEM certificate`, { cause: err });
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(pair.keyPem);
  } catch (err) {
    throw new TypeError(`${names.key} does not hold a PEM private key`, { cause: err });
  }
  let matches = true;
  try {
    matches = cert.checkPrivateKey(key);
  } catch {
    // This runtime cannot compare keys: the TLS layer will refuse a mismatch instead.
  }
  if (!matches) {
    throw new TypeError(
      typeof source === "string"
        ? `the private key does not belong to the certificate in ${source}`
        : `${names.key} does not belong to the certificate in ${names.cert}; give the key the certificate was issued for`,
    );
  }
}

/** Options for {@link selfSignedCertificate}. */
export interface SelfSignedCertificateOptions {
  nodeName: string;
  dnsNames: string[];
  ipAddresses: string[];
  clock: Clock;
  log: Logger;
  /** Default one year. */
  validityMs?: number;
}

/** Signs its own certificate once; the apiserver must not verify kubelet certificates. */
export function selfSignedCertificate(options: SelfSignedCertificateOptions): CertificateSource {
  return {
    async run(onKeyPair, signal) {
      options.log.warn(
        "serving the kubelet API with a self-signed certificate: only an apiserver without " +
          "--kubelet-certificate-authority accepts it; use --tls-cert-file or a CSR in production",
      );
      const keys = await generateKeyPair();
      const now = options.clock.now();
      const certPem = await createSelfSignedCertificate(keys, {
        commonName: `system:node:${options.nodeName}`,
        organizations: ["system:nodes"],
        dnsNames: options.dnsNames,
        ipAddresses: options.ipAddresses,
      }, {
        notBefore: new Date(now - 60_000),
        notAfter: new Date(now + (options.validityMs ?? 365 * 24 * 3600_000)),
      });
      onKeyPair({ certPem, keyPem: await privateKeyPem(keys) });
      await new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
    },
  };
}
