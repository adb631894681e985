/**
 * `KubeClient`: the connection to one apiserver. It sends every request through one
 * {@link KubeClient.request} primitive (JSON in and out, throttled, retried on 429 and 5xx
 * honouring `Retry-After`, credentials refreshed after a 401) and groups the typed helpers a
 * kubelet needs under `client.pods`, `client.nodes`, `client.leases` and so on. `client.events`
 * has a client-side limit of its own, as the kubelet's separate event client does
 * (kubernetes/kubernetes cmd/kubelet/app/server.go: `--event-qps` 50, `--event-burst` 100), so a
 * burst of events never delays pod status writes.
 * @module
 */
import denoJson from "../deno.json" with { type: "json" };
import { type Clock, realClock } from "../base/clock.ts";
import { getLogger } from "../base/log.ts";
import { loadKubeConfig, type LoadKubeConfigOptions } from "./config/load.ts";
import type { ConnectionConfig, Credentials } from "./config/types.ts";
import { KubeApiError, KubeConnectionError } from "./errors.ts";
import { RateLimiter } from "./rate_limiter.ts";
import type { KubeRequester, RequestOptions } from "./request.ts";
import { createApis, type KubeApis } from "./resources/apis.ts";
import {
  DEFAULT_RETRY_POLICY,
  isRetryableConnectionFailure,
  isRetryableStatus,
  parseRetryAfter,
  retryDelay,
  type RetryPolicy,
} from "./retry.ts";
import {
  authorizationHeader,
  buildUrl,
  HttpClientPool,
  mergeCredentials,
  releasingWhenRead,
} from "./transport.ts";
import type { Status } from "kubernetes-types/meta/v1.d.ts";

/** `vkubelet/<version>`, the default `User-Agent`. */
export const DEFAULT_USER_AGENT = `vkubelet/${denoJson.version}`;

/** Options for {@link KubeClient}. */
export interface KubeClientOptions {
  /** Sustained requests per second (client-go's `QPS`); default 50, like the kubelet's. 0 = off. */
  qps?: number;
  /** Requests allowed in a burst; default 100, like the kubelet's. */
  burst?: number;
  /**
   * Sustained event writes per second (`client.events`); default 50, the kubelet's `--event-qps`.
   * 0 = off. Events waiting for the limit are released in rounds of one second's worth.
   */
  eventQps?: number;
  /** Event writes allowed in a burst; default 100, the kubelet's `--event-burst`. */
  eventBurst?: number;
  retry?: Partial<RetryPolicy>;
  userAgent?: string;
  clock?: Clock;
  /**
   * Told of every answer (and of every failed connection, as code 0), retries included: for
   * metrics such as requests by verb and code. `verb` is `WATCH` for watches, `method` the HTTP
   * method, `host` the server's host and port. Must not throw.
   */
  onResponse?: (response: { verb: string; method: string; host: string; code: number }) => void;
  /**
   * Told once per request that is neither a watch nor a stream, when it has settled: how long it
   * took, the client's rate limiter and retries included (client-go's
   * `rest_client_request_duration_seconds`, k8s.io/client-go rest/request.go). Must not throw.
   */
  onRequestDone?: (request: { method: string; host: string; seconds: number }) => void;
  /**
   * Called just before each attempt is sent (after the rate limiter, retries included); what it
   * throws fails the request unsent. Leader election fences writes with it (k8s/leader_election/fence.ts).
   */
  beforeSend?: (request: { method: string; path: string }) => void;
}

const log = getLogger(["vkubelet", "k8s"]);

/** A client for one apiserver and one identity. Close it when done to free its connections. */
export class KubeClient implements KubeRequester, KubeApis, Disposable {
  readonly config: ConnectionConfig;
  readonly pods: KubeApis["pods"];
  readonly nodes: KubeApis["nodes"];
  readonly leases: KubeApis["leases"];
  readonly events: KubeApis["events"];
  readonly configMaps: KubeApis["configMaps"];
  readonly secrets: KubeApis["secrets"];
  readonly services: KubeApis["services"];
  readonly persistentVolumeClaims: KubeApis["persistentVolumeClaims"];
  readonly persistentVolumes: KubeApis["persistentVolumes"];
  readonly namespaces: KubeApis["namespaces"];
  readonly serviceAccounts: KubeApis["serviceAccounts"];
  readonly tokenReviews: KubeApis["tokenReviews"];
  readonly subjectAccessReviews: KubeApis["subjectAccessReviews"];
  readonly csrs: KubeApis["csrs"];
  #pool: HttpClientPool;
  #limiter: RateLimiter;
  #eventLimiter: RateLimiter;
  #retry: RetryPolicy;
  #userAgent: string;
  #clock: Clock;
  #onResponse?: KubeClientOptions["onResponse"];
  #onRequestDone?: KubeClientOptions["onRequestDone"];
  /** The server's host and port, the `host` of the request hooks. */
  #host: string;
  #beforeSend?: KubeClientOptions["beforeSend"];

  constructor(config: ConnectionConfig, options: KubeClientOptions = {}) {
    this.config = config;
    this.#clock = options.clock ?? realClock;
    this.#onResponse = options.onResponse;
    this.#onRequestDone = options.onRequestDone;
    this.#host = serverHost(config.server);
    this.#beforeSend = options.beforeSend;
    this.#pool = new HttpClientPool(config);
    this.#limiter = new RateLimiter({
      qps: options.qps ?? 50,
      burst: options.burst ?? 100,
      clock: this.#clock,
    });
    const eventQps = options.eventQps ?? 50;
    this.#eventLimiter = new RateLimiter({
      qps: eventQps,
      burst: options.eventBurst ?? 100,
      // Events are a background stream: sent in rounds of a second's worth, not one timer each.
      batch: Math.ceil(eventQps),
      clock: this.#clock,
    });
    this.#retry = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.#userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    const apis = createApis(this, { events: this.#limitedBy(this.#eventLimiter) });
    this.pods = apis.pods;
    this.nodes = apis.nodes;
    this.leases = apis.leases;
    this.events = apis.events;
    this.configMaps = apis.configMaps;
    this.secrets = apis.secrets;
    this.services = apis.services;
    this.persistentVolumeClaims = apis.persistentVolumeClaims;
    this.persistentVolumes = apis.persistentVolumes;
    this.namespaces = apis.namespaces;
    this.serviceAccounts = apis.serviceAccounts;
    this.tokenReviews = apis.tokenReviews;
    this.subjectAccessReviews = apis.subjectAccessReviews;
    this.csrs = apis.csrs;
  }

  /** Loads configuration like kubectl ({@link loadKubeConfig}) and connects with it. */
  static async fromConfig(
    options: LoadKubeConfigOptions & KubeClientOptions = {},
  ): Promise<KubeClient> {
    return new KubeClient(await loadKubeConfig(options), options);
  }

  request<T>(options: RequestOptions & { stream?: false }): Promise<T>;
  request(options: RequestOptions & { stream: true }): Promise<ReadableStream<Uint8Array>>;
  request(options: RequestOptions & { stream?: boolean }): Promise<unknown> {
    return this.#request(options, this.#limiter);
  }

  async #request(
    options: RequestOptions & { stream?: boolean },
    limiter: RateLimiter,
  ): Promise<unknown> {
    if (options.stream) {
      const { response, release } = await this.#send(options, limiter);
      // A stream keeps its connection in use until it ends: a rotated certificate's old client
      // is closed only after its last stream (./transport.ts).
      return releasingWhenRead(response, release).body ??
        new ReadableStream({ start: (c) => c.close() });
    }
    const started = this.#onRequestDone ? this.#clock.now() : 0;
    try {
      // An ordinary answer is read here at once, natively: wrapping every body to learn when it
      // was read cost a JavaScript turn per chunk (a 1,000-pod list is hundreds of them).
      const { response, release } = await this.#send(options, limiter);
      let text: string;
      try {
        text = await response.text();
      } finally {
        release();
      }
      return text === "" ? undefined : JSON.parse(text);
    } finally {
      this.#onRequestDone?.({
        method: options.method ?? "GET",
        host: this.#host,
        seconds: (this.#clock.now() - started) / 1000,
      });
    }
  }

  /** A requester on this connection that is throttled by `limiter` instead of the shared one. */
  #limitedBy(limiter: RateLimiter): KubeRequester {
    return {
      request:
        ((options: RequestOptions & { stream?: boolean }) =>
          this.#request(options, limiter)) as KubeRequester["request"],
    };
  }

  /** Frees pooled connections; requests after this fail. */
  close(): void {
    this.#pool.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  async #send(options: RequestOptions, limiter: RateLimiter): Promise<FetchedResponse> {
    const method = options.method ?? "GET";
    const signal = options.signal;
    let refreshedCredentials = false;
    for (let attempt = 0;; attempt++) {
      await limiter.acquire({ signal });
      const credentials = await this.#credentials(signal);
      this.#beforeSend?.({ method, path: options.path });
      let fetched: FetchedResponse;
      const verb = options.query?.watch ? "WATCH" : method;
      try {
        fetched = await this.#fetch(options, credentials);
        const response = fetched.response;
        this.#onResponse?.({ verb, method, host: this.#host, code: response.status });
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        this.#onResponse?.({ verb, method, host: this.#host, code: 0 });
        const failure = connectionError(this.config, err);
        if (!isRetryableConnectionFailure(method) || attempt >= this.#retry.maxRetries) {
          throw failure;
        }
        await this.#backoff(attempt + 1, undefined, failure, options);
        continue;
      }
      const { response, release } = fetched;
      if (response.ok) return fetched;
      const retryAfter = parseRetryAfter(response.headers.get("retry-after"), this.#clock.now());
      let error: KubeApiError;
      try {
        error = await apiError(response, method, options);
      } finally {
        release();
      }
      if (response.status === 401 && this.config.credentialSource && !refreshedCredentials) {
        // Rotated token or expired exec credential: ask for fresh ones once.
        this.config.credentialSource.invalidate();
        refreshedCredentials = true;
        attempt--;
        continue;
      }
      const retryable = isRetryableStatus(response.status, method, retryAfter !== undefined);
      if (!retryable || attempt >= this.#retry.maxRetries) throw error;
      await this.#backoff(attempt + 1, retryAfter, error, options);
    }
  }

  async #backoff(
    attempt: number,
    retryAfter: number | undefined,
    err: Error,
    options: RequestOptions,
  ): Promise<void> {
    const delay = retryDelay(attempt, retryAfter, this.#retry);
    log.debug("retrying {method} {path} in {delay} ms (attempt {attempt}): {err}", {
      method: options.method ?? "GET",
      path: options.path,
      delay: Math.round(delay),
      attempt,
      err: err.message,
    });
    await this.#clock.sleep(delay, options.signal);
  }

  async #credentials(signal: AbortSignal | undefined): Promise<Credentials> {
    const dynamic = await this.config.credentialSource?.get({ signal });
    return mergeCredentials(this.config.credentials, dynamic);
  }

  async #fetch(options: RequestOptions, credentials: Credentials): Promise<FetchedResponse> {
    const headers = new Headers({ "accept": "application/json", "user-agent": this.#userAgent });
    const authorization = authorizationHeader(credentials);
    if (authorization) headers.set("authorization", authorization);
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
      headers.set("content-type", options.contentType ?? "application/json");
    }
    const lease = this.#pool.acquire(
      credentials.clientCertificate,
      options.query?.watch ? "watch" : "request",
    );
    try {
      const response = await fetch(buildUrl(this.config.server, options.path, options.query), {
        method: options.method ?? "GET",
        headers,
        body,
        signal: options.signal,
        client: lease.client,
      });
      // The connection stays in use until the caller has read the body and calls `release`.
      return { response, release: lease.release };
    } catch (err) {
      lease.release();
      throw err;
    }
  }
}

/** An answer whose connection stays counted in use until `release` (after its body is read). */
interface FetchedResponse {
  response: Response;
  release: () => void;
}

async function apiError(
  response: Response,
  method: string,
  options: RequestOptions,
): Promise<KubeApiError> {
  const text = await response.text().catch(() => "");
  let status: Status | undefined;
  try {
    const parsed = JSON.parse(text);
    if (parsed?.kind === "Status") status = parsed;
  } catch {
    // Not JSON: a proxy or load balancer answered; keep the text as the message.
  }
  status ??= { message: text.trim().slice(0, 500) || response.statusText || undefined };
  const path = buildUrl("", options.path, options.query);
  return new KubeApiError(response.status, { method, path, status });
}

/** The host and port of a server URL (`127.0.0.1:6443`), or the URL itself if it is not one. */
function serverHost(server: string): string {
  try {
    return new URL(server).host;
  } catch {
    return server;
  }
}

function connectionError(config: ConnectionConfig, err: unknown): KubeConnectionError {
  let text = "";
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    text += ` ${e.message}`;
  }
  let hint: string | undefined;
  if (/certificate|tls|handshake|UnknownIssuer|CertNotValid/i.test(text)) {
    hint = `check the cluster CA and client certificate in ${config.source}`;
  }
  return new KubeConnectionError(config.server, { cause: err, hint });
}
