/**
 * The TLS side of the client: one `Deno.HttpClient` per client certificate in use, built from a
 * {@link ConnectionConfig}, and the `Authorization` header for the current credentials.
 * @module
 */
import type { ClientCertificate, ConnectionConfig, Credentials } from "./config/types.ts";

/**
 * What a connection carries: watches (long-lived streams) get connections of their own, apart
 * from ordinary requests. Over HTTP/2 every request to one server shares one connection, and a
 * pod watch that streams thousands of events slowed the status writes beside it: 10,000 pods
 * took 31 s to be Running with one connection and 25.5 s with two (bench, scenario 1).
 */
export type ConnectionUse = "request" | "watch";

/** Holds the pooled HTTP clients for one connection; a new certificate gets a new pool. */
export class HttpClientPool {
  #config: ConnectionConfig;
  /** Newest last; at most two per use kept, so requests still running on the old one can finish. */
  #clients: { certificate?: ClientCertificate; use: ConnectionUse; client: Deno.HttpClient }[] = [];
  #closed = false;

  constructor(config: ConnectionConfig) {
    this.#config = config;
  }

  /** The client for `use` that presents `certificate` (or none) during the handshake. */
  clientFor(
    certificate: ClientCertificate | undefined,
    use: ConnectionUse = "request",
  ): Deno.HttpClient {
    if (this.#closed) throw new TypeError("the Kubernetes client was closed");
    const current = this.#clients.find((c) =>
      c.use === use && c.certificate?.cert === certificate?.cert &&
      c.certificate?.key === certificate?.key
    );
    if (current) return current.client;
    const options: Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> = {};
    if (this.#config.caCerts) options.caCerts = this.#config.caCerts;
    if (this.#config.proxyUrl) options.proxy = { url: this.#config.proxyUrl };
    if (certificate) {
      options.cert = certificate.cert;
      options.key = certificate.key;
    }
    const client = Deno.createHttpClient(options as Deno.CreateHttpClientOptions);
    this.#clients.push({ certificate, use, client });
    const ofUse = this.#clients.filter((c) => c.use === use);
    for (const old of ofUse.slice(0, -2)) {
      old.client.close();
      this.#clients.splice(this.#clients.indexOf(old), 1);
    }
    return client;
  }

  /** Closes every pooled connection; later requests fail. */
  close(): void {
    this.#closed = true;
    for (const { client } of this.#clients) client.close();
    this.#clients = [];
  }
}

/** Merges static credentials from the config with those of a changing source (the latter win). */
export function mergeCredentials(
  fixed: Credentials | undefined,
  dynamic: Credentials | undefined,
): Credentials {
  return { ...fixed, ...dynamic };
}

/** The `Authorization` header value for credentials, if they carry a token or a password. */
export function authorizationHeader(credentials: Credentials): string | undefined {
  if (credentials.token) return `Bearer ${credentials.token}`;
  if (credentials.basic) {
    const { username, password } = credentials.basic;
    const bytes = new TextEncoder().encode(`${username}:${password}`);
    return `Basic ${btoa(String.fromCharCode(...bytes))}`;
  }
  return undefined;
}

/** Builds a request URL from the server (which may carry a path prefix), a path and a query. */
export function buildUrl(
  server: string,
  path: string,
  query?: Record<string, string | number | boolean | undefined>,
): string {
  if (!path.startsWith("/")) throw new TypeError(`request path must start with /: ${path}`);
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined) params.set(key, String(value));
  }
  const search = params.toString();
  return `${server}${path}${search ? `?${search}` : ""}`;
}
