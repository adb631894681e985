/**
 * A serving certificate requested from the cluster, as the kubelet's
 * `--rotate-server-certificates` does (kubernetes/kubernetes pkg/kubelet/certificate
 * kubelet.go `NewKubeletServerCertificateManager`, client-go util/certificate
 * certificate_manager.go): a new P-256 key, a CertificateSigningRequest with signer
 * `kubernetes.io/kubelet-serving` for CN `system:node:<node>`, O `system:nodes` and the node's
 * addresses as SANs, used once approved and issued, and renewed at a random point between 70 %
 * and 90 % of its lifetime. Someone (an operator, or an approver controller) must approve it.
 * @module
 */
import { X509Certificate } from "node:crypto";
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { CertificateSource, KeyPair } from "./certificates.ts";
import type { CsrApi } from "./reviews.ts";
import { createCsr, generateKeyPair, privateKeyPem } from "./x509.ts";

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
}

/** Requests, then keeps renewing, the serving certificate; see the module doc. */
export function csrCertificate(options: CsrCertificateOptions): CertificateSource {
  return {
    async run(onKeyPair, signal) {
      while (!signal.aborted) {
        let pair: KeyPair;
        try {
          pair = await requestServingCertificate(options, signal);
        } catch (err) {
          if (signal.aborted) return;
          options.log.warn("serving certificate request failed, retrying: {err}", { err });
          const retryAt = options.clock.now() + (options.retryDelayMs ?? 30_000);
          if (!await sleepUntil(options.clock, retryAt, signal)) return;
          continue;
        }
        onKeyPair(pair);
        const renewAt = renewalTime(
          pair.certPem,
          options.renewFraction?.() ?? 0.7 + 0.2 * Math.random(),
        );
        options.log.info("serving certificate valid; renewing at {at}", {
          at: new Date(renewAt).toISOString(),
        });
        if (!await sleepUntil(options.clock, renewAt, signal)) return;
      }
    },
  };
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
  const keys = await generateKeyPair();
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
