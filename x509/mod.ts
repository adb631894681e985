/**
 * Keys and certificates without a native library: DER encoding, P-256 keys, PKCS#10 requests
 * and self-signed certificates ({@link generateKeyPair}, {@link createCsr},
 * {@link createSelfSignedCertificate}), and the serving certificate sources the kubelet API
 * listens with — files ({@link fileCertificates}), a CSR the cluster signs and that is renewed
 * before it expires ({@link csrCertificate}), or self-signed ({@link selfSignedCertificate}) —
 * with a {@link CertificateStore} that keeps an issued pair across restarts. The same CSR source
 * with `kind: "client"` keeps a node's client certificate (TLS bootstrap and rotation).
 *
 * A library like `spdy/`: it imports only `base/`.
 *
 * ```ts
 * const source = fileCertificates({ certFile, keyFile, clock, log });
 * await source.run((pair) => server.setSecureContext(pair), signal);
 * ```
 * @module
 */
export {
  type CertificateSource,
  checkPair,
  type FileCertificateOptions,
  fileCertificates,
  type KeyPair,
  selfSignedCertificate,
  type SelfSignedCertificateOptions,
} from "./certificate_source.ts";
export {
  type CertificateStore,
  defaultCertDirs,
  fileCertificateStore,
  type FileCertificateStoreOptions,
  writeAtomically,
} from "./certificate_store.ts";
export {
  type CsrApi,
  csrCertificate,
  type CsrCertificateOptions,
  renewalTime,
  requestServingCertificate,
  retryDelay,
  storedPairProblem,
} from "./csr_certificate.ts";
export {
  CSR_PROFILES,
  type CsrKind,
  type CsrRequestOptions,
  CsrTimeoutError,
  requestCertificate,
} from "./csr_request.ts";
export {
  type CertificateSubject,
  createCsr,
  createSelfSignedCertificate,
  type EcKeyPair,
  generateKeyPair,
  privateKeyPem,
} from "./encode.ts";
export { type SharedCertificates, sharedCertificates } from "./shared_certificate.ts";
