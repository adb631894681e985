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

/** A client handed out for one request; `release` once its answer has been read or dropped. */
export interface HttpClientLease {
  client: Deno.HttpClient;
  release(): void;
}

interface PooledClient {
  certificate?: ClientCertificate;
  use: ConnectionUse;
  client: Deno.HttpClient;
  /** Requests (and streams) still running on it. */
  inFlight: number;
  /** A newer certificate has its own client: close this one once nothing runs on it. */
  superseded: boolean;
}

/**
 * Holds the pooled HTTP clients for one connection. A new client certificate (a rotation) gets
 * new clients; new requests go to them at once, while requests and watches already running on
 * the old ones go on to their natural end (the old certificate is still valid: rotation happens
 * at 70-90 % of its lifetime), after which the old clients are closed. The kubelet instead closes
 * every connection when its certificate changes (kubernetes/kubernetes
 * pkg/kubelet/certificate/transport.go `updateTransport`), which cuts every watch.
 */
export class HttpClientPool {
  #config: ConnectionConfig;
  #clients: PooledClient[] = [];
  #closed = false;

  constructor(config: ConnectionConfig) {
    this.#config = config;
  }

  /** The client for `use` that presents `certificate` (or none); not counted as in flight. */
  clientFor(
    certificate: ClientCertificate | undefined,
    use: ConnectionUse = "request",
  ): Deno.HttpClient {
    const lease = this.acquire(certificate, use);
    lease.release();
    return lease.client;
  }

  /** Like {@link clientFor}, counted as in flight until `release`. */
  acquire(
    certificate: ClientCertificate | undefined,
    use: ConnectionUse = "request",
  ): HttpClientLease {
    if (this.#closed) throw new TypeError("the Kubernetes client was closed");
    const entry =
      this.#clients.find((c) =>
        c.use === use && c.certificate?.cert === certificate?.cert &&
        c.certificate?.key === certificate?.key
      ) ?? this.#add(certificate, use);
    entry.inFlight++;
    let released = false;
    return {
      client: entry.client,
      release: () => {
        if (released) return;
        released = true;
        entry.inFlight--;
        this.#closeIfIdle(entry);
      },
    };
  }

  /** How many clients are open (tests watch old ones close). */
  get openClients(): number {
    return this.#clients.length;
  }

  #add(certificate: ClientCertificate | undefined, use: ConnectionUse): PooledClient {
    const options: Deno.CreateHttpClientOptions & Partial<Deno.TlsCertifiedKeyPem> = {};
    if (this.#config.caCerts) options.caCerts = this.#config.caCerts;
    if (this.#config.proxyUrl) options.proxy = { url: this.#config.proxyUrl };
    if (certificate) {
      options.cert = certificate.cert;
      options.key = certificate.key;
    }
    const client = Deno.createHttpClient(options as Deno.CreateHttpClientOptions);
    const entry: PooledClient = { certificate, use, client, inFlight: 0, superseded: false };
    for (const old of this.#clients.filter((c) => c.use === use)) {
      old.superseded = true;
      this.#closeIfIdle(old);
    }
    this.#clients.push(entry);
    return entry;
  }

  #closeIfIdle(entry: PooledClient): void {
    if (!entry.superseded || entry.inFlight > 0) return;
    const at = this.#clients.indexOf(entry);
    if (at < 0) return;
    this.#clients.splice(at, 1);
    entry.client.close();
  }

  /** Closes every pooled connection; later requests fail. */
  close(): void {
    this.#closed = true;
    for (const { client } of this.#clients) client.close();
    this.#clients = [];
  }
}

/**
 * `response` with its body wrapped so that `release` runs once the body has been read to the
 * end, has failed, or was cancelled (at once when there is no body).
 */
export function releasingWhenRead(response: Response, release: () => void): Response {
  const body = response.body;
  if (!body) {
    release();
    return response;
  }
  const reader = body.getReader();
  const wrapped = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else controller.enqueue(value);
      } catch (err) {
        release();
        controller.error(err);
      }
    },
    async cancel(reason) {
      release();
      await reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return new Response(wrapped, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
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
