/**
 * A client certificate that changes while the client runs: the node's certificate from TLS
 * bootstrap, replaced at every rotation (`--rotate-certificates`). Each request asks for the
 * current one, so new requests present the new certificate at once, while streams opened with
 * the old one finish on their own connections (k8s/transport.ts).
 * @module
 */
import type { ClientCertificate, Credentials, CredentialSource } from "./types.ts";

/** A {@link CredentialSource} holding the newest client certificate it was given. */
export class ClientCertificateSource implements CredentialSource {
  readonly description: string;
  #current?: ClientCertificate;

  /** `description` says where the certificate comes from, e.g. its file. */
  constructor(description: string, initial?: ClientCertificate) {
    this.description = description;
    this.#current = initial;
  }

  /** The certificate new requests present from now on. */
  set(certificate: ClientCertificate): void {
    this.#current = certificate;
  }

  /** The certificate in use, if any yet. */
  get current(): ClientCertificate | undefined {
    return this.#current;
  }

  get(): Promise<Credentials> {
    return Promise.resolve(this.#current ? { clientCertificate: this.#current } : {});
  }

  /** Nothing to forget: a 401 is not cured by reading the same certificate again. */
  invalidate(): void {}
}
