/**
 * A certificate requested from the cluster and kept renewed, as the kubelet's certificate
 * managers do (kubernetes/kubernetes pkg/kubelet/certificate/kubelet.go
 * `NewKubeletServerCertificateManager` for `--rotate-server-certificates`,
 * `NewKubeletClientCertificateManager` for `--rotate-certificates`; client-go
 * util/certificate/certificate_manager.go): one request per round (`./csr_request.ts`), used once
 * signed, and renewed at a random point between 70 % and 90 % of its lifetime. A failed round
 * (denied, not signed within 15 minutes, the apiserver refusing the credential) is logged with
 * the request's name and tried again after 2, 4, 8, 16 s and then every 32 s, as client-go backs
 * off; it never ends the loop.
 *
 * The issued certificate and its key are kept in a {@link CertificateStore} (`--cert-dir`, as
 * the kubelet keeps `kubelet-server-current.pem` and `kubelet-client-current.pem`), so that a
 * restart uses them again instead of filing a CSR. A stored pair is always preferred while it is
 * valid and still names this node and its addresses; past its renewal point it is used while a
 * new one is requested.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { checkPair } from "./certificate_source.ts";
import type { CertificateSource, KeyPair } from "./certificate_source.ts";
import type { CertificateStore } from "./certificate_store.ts";
import { type CsrRequestOptions, requestCertificate } from "./csr_request.ts";
import type { Clock } from "../base/clock.ts";

export type { CsrApi } from "./csr_request.ts";

/** Options for {@link csrCertificate}. */
export interface CsrCertificateOptions extends CsrRequestOptions {
  /** First wait after a failed round, doubled up to 16 times that (default 2 s, then 32 s). */
  retryDelayMs?: number;
  /** Where in the lifetime to renew, as a fraction; default a random value in [0.7, 0.9). */
  renewFraction?: () => number;
  /** Keeps the issued pair across restarts; none keeps it in memory only. */
  store?: CertificateStore;
}

/** Requests, then keeps renewing, the serving certificate; see the module doc. */
export function csrCertificate(options: CsrCertificateOptions): CertificateSource {
  return {
    async run(onKeyPair, signal) {
      const { log, clock } = options;
      let pair = await loadStoredPair(options);
      if (pair) onKeyPair(pair);
      let failures = 0;
      while (!signal.aborted) {
        if (pair) {
          const renewAt = renewalTime(
            pair.certPem,
            options.renewFraction?.() ?? 0.7 + 0.2 * Math.random(),
          );
          log.info("{kind} certificate valid until {until}; renewing at {at}", {
            kind: kindOf(options),
            until: new X509Certificate(pair.certPem).validTo,
            at: new Date(renewAt).toISOString(),
          });
          if (!await sleepUntil(clock, renewAt, signal)) return;
        }
        let next: KeyPair;
        try {
          next = await requestCertificate(options, signal);
        } catch (err) {
          if (signal.aborted) return;
          const delay = retryDelay(options.retryDelayMs ?? 2_000, failures++);
          log.warn("{kind} certificate request failed; asking again in {seconds} s: {err}", {
            kind: kindOf(options),
            seconds: Math.round(delay / 1000),
            err: err instanceof Error ? err.message : String(err),
          });
          if (!await sleepUntil(clock, clock.now() + delay, signal)) return;
          continue;
        }
        failures = 0;
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
    log.warn("cannot read the stored {kind} certificate {path}; requesting a new one: {err}", {
      kind: kindOf(options),
      path: store.path,
      err,
    });
    return undefined;
  }
  if (!pair) return undefined;
  const problem = storedPairProblem(pair, options, options.clock.now());
  if (problem) {
    log.info("not reusing the stored {kind} certificate {path}: {problem}", {
      kind: kindOf(options),
      path: store.path,
      problem,
    });
    return undefined;
  }
  log.info("reusing the {kind} certificate stored in {path}", {
    kind: kindOf(options),
    path: store.path,
  });
  return pair;
}

async function saveIssuedPair(options: CsrCertificateOptions, pair: KeyPair): Promise<void> {
  if (!options.store) return;
  try {
    await options.store.save(pair);
  } catch (err) {
    // Serving matters more than keeping it; the next start asks for a new one.
    options.log.warn(
      "cannot store the {kind} certificate in {path}, so a restart files a new CSR: {err}; " +
        "make --cert-dir writable",
      { kind: kindOf(options), path: options.store.path, err },
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

/** One serving-certificate round; see {@link requestCertificate}. */
export function requestServingCertificate(
  options: CsrRequestOptions,
  signal: AbortSignal,
): Promise<KeyPair> {
  return requestCertificate({ ...options, kind: "serving" }, signal);
}

function kindOf(options: CsrRequestOptions): string {
  return options.kind ?? "serving";
}

/**
 * The wait after the `failures`-th failure in a row: `first` doubled each time up to 16 times
 * `first`, plus up to 10 % jitter (client-go: 2 s × 2 for 5 steps, then every 32 s).
 */
export function retryDelay(first: number, failures: number): number {
  return first * 2 ** Math.min(failures, 4) * (1 + 0.1 * Math.random());
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
