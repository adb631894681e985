/**
 * The dependencies of the kubelet API app and server, and the Hono environment its handlers
 * see. Kept apart so that routes, auth and the listener share one definition.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Clock } from "../../base/clock.ts";
import type { Logger } from "../../base/log.ts";
import type { VkubeletMetrics } from "../metrics.ts";
import type { Tracer } from "../tracing.ts";
import type { Provider } from "../../provider/mod.ts";
import type { AccessReviewer, TokenReviewer, UserInfo } from "./reviews.ts";

/** This node's pods as the API server has them (the pod controller's cache). */
export type PodCache = () => readonly Pod[] | Promise<readonly Pod[]>;

/** How callers are authenticated and authorized. Nothing is open to everyone by default. */
export interface KubeletAuth {
  /**
   * PEM bundle client certificates must chain to (`APISERVER_CA_CERT_LOCATION`, else the
   * cluster CA). Used by the TLS listener; without it no client certificate is accepted.
   */
  clientCaPem?: string;
  /** Checks bearer tokens; without it bearer tokens are refused with 401. */
  tokenReviewer?: TokenReviewer;
  /** Decides each request; `alwaysAllow` for `--authorization-mode=AlwaysAllow`. */
  accessReviewer: AccessReviewer;
  /** Let requests without credentials in as `system:anonymous` (still authorized). */
  anonymous?: boolean;
  /** TokenReview answers are kept this long; default 2 min (the kubelet's). */
  tokenCacheTtlMs?: number;
  /** Refused tokens are remembered this long; default 10 s. */
  tokenFailureCacheTtlMs?: number;
  /** Allowed decisions are kept this long; default 5 min (the kubelet's). */
  allowCacheTtlMs?: number;
  /** Denied decisions are kept this long; default 30 s (the kubelet's). */
  denyCacheTtlMs?: number;
}

/** The names in an exec/attach/portForward path. */
export interface StreamingParams {
  namespace: string;
  pod: string;
  /** Absent for portForward. */
  container?: string;
  /** The pod's uid when the path names one (it matched the pod's). */
  uid?: string;
}

/** What a streaming route hands to a {@link StreamingHandler}. */
export interface StreamingContext {
  /** The raw connection after the request head; the handler owns it once it returns nothing. */
  socket: Duplex;
  /** Bytes the client sent after the request head (hand them on with `socket.unshift`). */
  head: Uint8Array;
  /** The request as Hono saw it (method, URL, headers). */
  request: Request;
  /** The Node request, for libraries that want it (npm `ws`'s `handleUpgrade`). */
  incoming: IncomingMessage;
  params: StreamingParams;
  query: URLSearchParams;
  user: UserInfo;
  /** The pod from the pod cache. */
  pod: Pod;
  provider: Provider;
  /** Aborts when the server shuts down. */
  signal: AbortSignal;
}

/**
 * A session handler takes over the socket (returns nothing) or answers with a `Response`
 * that the server writes back as HTTP/1.1 (a refused protocol, a bad query).
 */
export type StreamingResult = Response | undefined | Promise<Response | undefined>;

/** The exec, attach and port-forward protocols (SPDY/WebSocket), plugged in from outside. */
export interface StreamingHandler {
  exec(context: StreamingContext): StreamingResult;
  attach(context: StreamingContext): StreamingResult;
  portForward(context: StreamingContext): StreamingResult;
}

/**
 * The remote pods' tunnel endpoint, plugged in from outside. Its callers are agents with a
 * credential it issued, not cluster users: it authenticates them itself, before (and instead
 * of) the kubelet API's certificate, TokenReview and SubjectAccessReview checks.
 */
export interface TunnelEndpoint {
  /** Takes over `socket` (returns nothing) or answers (401, 400) without taking it. */
  accept(upgrade: { request: Request; socket: Duplex; head: Uint8Array }): StreamingResult;
}

/** What {@link createKubeletApp} needs. */
export interface KubeletApiDeps {
  provider: Provider;
  auth: KubeletAuth;
  nodeName: string;
  podCache: PodCache;
  log: Logger;
  clock: Clock;
  metrics?: VkubeletMetrics;
  /** A span per request (`GET /containerLogs`, ...) when tracing is on. */
  tracer?: Tracer;
  /** Without it exec, attach and portForward answer 501. */
  streaming?: StreamingHandler;
  /** The pod network tunnel (core/tunnel) on `/tunnel`; absent, that path is a 404. */
  tunnel?: TunnelEndpoint;
  /** Aborts on shutdown; open log streams end with it. */
  signal?: AbortSignal;
  /**
   * Told the connection of each request authenticated as a user (not anonymous) and authorized;
   * the listener then never closes that connection to make room for another.
   */
  onAuthorized?(socket: PeerSocket): void;
}

/** The part of a TLS socket authentication reads (a `node:tls` `TLSSocket`). */
export interface PeerSocket {
  authorized?: boolean;
  /** Why the peer's certificate failed verification (Node's `TLSSocket.authorizationError`). */
  authorizationError?: Error | string | null;
  getPeerCertificate?(): { subject?: Record<string, string | string[] | undefined> } | null;
}

/** The raw connection of an upgrade request, and whether a route took it. */
export interface UpgradeSlot {
  socket: Duplex;
  head: Uint8Array;
  /** Set by the route that took the socket; the listener then writes nothing. */
  taken: boolean;
}

/** Hono's environment for the kubelet API. */
export interface KubeletEnv {
  Bindings: {
    incoming?: IncomingMessage | { socket?: PeerSocket };
    outgoing?: ServerResponse;
    upgrade?: UpgradeSlot;
  };
  Variables: {
    user: UserInfo;
  };
}
