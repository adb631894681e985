/**
 * The resolved connection settings every configuration source (kubeconfig, in-cluster) produces.
 * @module
 */

/** A client certificate and its private key, both PEM. */
export interface ClientCertificate {
  cert: string;
  key: string;
}

/** What a credential source hands the transport for one request. */
export interface Credentials {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as `Authorization: Basic ...` (kubeconfig `username`/`password`). */
  basic?: { username: string; password: string };
  /** Presented during the TLS handshake. */
  clientCertificate?: ClientCertificate;
}

/**
 * A source of credentials that may change over time: a token file that is rotated, or an exec
 * plugin whose answer expires. The transport calls {@link CredentialSource.invalidate} after a
 * 401 and asks again once.
 */
export interface CredentialSource {
  /** Current credentials; cheap when cached. */
  get(options?: { signal?: AbortSignal }): Promise<Credentials>;
  /** Forgets cached credentials so that the next {@link CredentialSource.get} fetches fresh ones. */
  invalidate(): void;
  /** Says where the credentials come from, for error messages (never the secret itself). */
  readonly description: string;
}

/** Everything needed to talk to one apiserver as one user. */
export interface ConnectionConfig {
  /** Base URL such as `https://10.0.0.1:6443`, possibly with a path prefix; no trailing slash. */
  server: string;
  /** Extra PEM root certificates that verify the apiserver (on top of the system store). */
  caCerts?: string[];
  /** An HTTP(S) or SOCKS5 proxy for every connection (kubeconfig `proxy-url`). */
  proxyUrl?: string;
  /** Credentials that do not change: a client certificate, token or basic auth from the file. */
  credentials?: Credentials;
  /** Credentials that can change (token file, exec plugin); consulted on every request. */
  credentialSource?: CredentialSource;
  /** Namespace of the context or of the pod's service account; `default` otherwise. */
  namespace: string;
  /** Where this configuration came from, e.g. `kubeconfig /a/b (context "kind")` or `in-cluster`. */
  source: string;
}
