/**
 * One round of a certificate request through the cluster, as client-go's certificate manager
 * does it (kubernetes/kubernetes staging/src/k8s.io/client-go/util/certificate
 * certificate_manager.go `rotateCerts`): a new P-256 key, a CertificateSigningRequest for
 * `system:node:<node>` in `system:nodes`, and a wait of at most 15 minutes
 * (`certificateWaitTimeout`) for it to be approved and signed. Two kinds, as the kubelet asks
 * for them (pkg/kubelet/certificate/kubelet.go):
 *
 * - `serving`: signer `kubernetes.io/kubelet-serving`, usage server auth, the node's names and
 *   addresses as SANs; someone (an operator, or an approver the operator runs) approves it.
 * - `client`: signer `kubernetes.io/kube-apiserver-client-kubelet`, usage client auth, no SANs;
 *   the controller manager's `csrapproving` controller approves it when the requester may
 *   (`nodeclient` for a bootstrap token, `selfnodeclient` for the node renewing its own).
 *
 * While the request is pending, a line naming it and the `kubectl certificate approve` command
 * is logged once a minute.
 * @module
 */
import type { Clock } from "../base/clock.ts";
import type { Logger } from "../base/log.ts";
import type { KeyPair } from "./certificate_source.ts";
import type { CertificateSigningRequest } from "kubernetes-types/certificates/v1.d.ts";
import { createCsr, type EcKeyPair, generateKeyPair, privateKeyPem } from "./encode.ts";

/** The CertificateSigningRequest calls a certificate requester needs. */
export interface CsrApi {
  create(
    csr: CertificateSigningRequest,
    options: { signal?: AbortSignal },
  ): Promise<CertificateSigningRequest>;
  /** Resolves with the issued PEM certificate; rejects if denied, failed or deleted. */
  waitForCertificate(name: string, options: { signal?: AbortSignal }): Promise<string>;
}

/** Which certificate of a node: the kubelet API's, or the node's own to the apiserver. */
export type CsrKind = "serving" | "client";

/** The signer and usages of each kind (client-go util/certificate certificate_manager.go). */
export const CSR_PROFILES = {
  // An ECDSA key signs; "key encipherment" is for RSA only.
  serving: {
    signerName: "kubernetes.io/kubelet-serving",
    usages: ["digital signature", "server auth"],
  },
  client: {
    signerName: "kubernetes.io/kube-apiserver-client-kubelet",
    usages: ["digital signature", "client auth"],
  },
} as const;

/** What one request needs. */
export interface CsrRequestOptions {
  /** Default `serving`. */
  kind?: CsrKind;
  csrApi: CsrApi;
  nodeName: string;
  /** SANs of a serving certificate; a client certificate has none. */
  dnsNames: string[];
  ipAddresses: string[];
  clock: Clock;
  log: Logger;
  /** Asked-for lifetime (`spec.expirationSeconds`, at least 600); the signer may shorten it. */
  expirationSeconds?: number;
  /** Makes the key of each request; replaced in tests whose fake signer needs the key. */
  generateKeys?: () => Promise<EcKeyPair>;
  /** How long to wait for approval and signing; default 15 min, as client-go. */
  waitTimeoutMs?: number;
  /** How often a pending request is logged; default a minute. */
  pendingLogIntervalMs?: number;
}

/** A request that was not signed in time: names it and what to do. */
export class CsrTimeoutError extends Error {
  override name = "CsrTimeoutError";
}

/** One round: key, CSR object, wait for the signed certificate. */
export async function requestCertificate(
  options: CsrRequestOptions,
  signal: AbortSignal,
): Promise<KeyPair> {
  const kind = options.kind ?? "serving";
  const profile = CSR_PROFILES[kind];
  const keys = await (options.generateKeys ?? generateKeyPair)();
  const request = await createCsr(keys, {
    commonName: `system:node:${options.nodeName}`,
    organizations: ["system:nodes"],
    dnsNames: kind === "serving" ? options.dnsNames : [],
    ipAddresses: kind === "serving" ? options.ipAddresses : [],
  });
  const created = await options.csrApi.create({
    metadata: { generateName: `csr-${options.nodeName}-` },
    spec: {
      request: btoa(request),
      signerName: profile.signerName,
      usages: [...profile.usages],
      ...(options.expirationSeconds ? { expirationSeconds: options.expirationSeconds } : {}),
    },
  }, { signal });
  const name = created.metadata?.name ?? "";
  options.log.info(
    "waiting for {kind} CertificateSigningRequest {name} to be approved and signed " +
      "(by hand: kubectl certificate approve {name})",
    { kind, name },
  );
  const certPem = await waitLogged(options, name, signal);
  return { certPem, keyPem: await privateKeyPem(keys) };
}

/** Waits for `name`, logging it once a minute, giving up after the wait timeout. */
async function waitLogged(
  options: CsrRequestOptions,
  name: string,
  signal: AbortSignal,
): Promise<string> {
  const { clock, log } = options;
  const timeoutMs = options.waitTimeoutMs ?? 15 * 60_000;
  const everyMs = options.pendingLogIntervalMs ?? 60_000;
  const waiting = new AbortController();
  const both = AbortSignal.any([signal, waiting.signal]);
  let timedOut = false;
  const reminders = (async () => {
    for (let waited = 0; waited < timeoutMs;) {
      const step = Math.min(everyMs, timeoutMs - waited);
      await clock.sleep(step, both);
      waited += step;
      if (waited >= timeoutMs) break;
      log.warn(
        "CertificateSigningRequest {name} is still pending after {minutes} min: {hint}",
        { name, minutes: Math.round(waited / 60_000), hint: pendingHint(options.kind, name) },
      );
    }
    timedOut = true;
    waiting.abort();
  })().catch(() => {});
  try {
    return await options.csrApi.waitForCertificate(name, { signal: both });
  } catch (err) {
    signal.throwIfAborted();
    if (timedOut) {
      throw new CsrTimeoutError(
        `CertificateSigningRequest ${name} was not signed within ${
          Math.round(timeoutMs / 60_000)
        } min: ${pendingHint(options.kind, name)}`,
      );
    }
    throw err;
  } finally {
    waiting.abort();
    await reminders;
  }
}

function pendingHint(kind: CsrKind | undefined, name: string): string {
  return kind === "client"
    ? `the controller manager approves node client certificates when system:bootstrappers is ` +
      `bound to ClusterRole system:certificates.k8s.io:certificatesigningrequests:nodeclient ` +
      `(selfnodeclient for system:nodes) and its csrsigning controller has the cluster CA; or ` +
      `approve it: kubectl certificate approve ${name}`
    : `approve it (kubectl certificate approve ${name}) or run an approver for ` +
      `kubernetes.io/kubelet-serving CSRs`;
}
