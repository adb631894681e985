/**
 * Authentication as the kubelet does it (kubernetes/apiserver
 * pkg/authentication/authenticatorfactory/delegating.go, with kubernetes/kubernetes
 * cmd/kubelet/app/auth.go): a client certificate verified against the client CA (user = CN,
 * groups = O), else a bearer token checked with a TokenReview (cached), else — only when enabled
 * — `system:anonymous`. Like upstream's union authenticator built with `NewFailOnError`
 * (apiserver pkg/authentication/request/union), a credential that is offered but fails is a
 * 401 even with anonymous enabled: a client certificate that fails verification, a token the
 * TokenReview rejects, a WebSocket bearer token that does not decode.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import type { TokenReviewer, TokenReviewResult, UserInfo } from "./reviews.ts";
import { TtlCache } from "../../base/ttl_cache.ts";
import type { PeerSocket } from "./types.ts";

/** Options for {@link Authenticator}. */
export interface AuthenticatorOptions {
  tokenReviewer?: TokenReviewer;
  anonymous?: boolean;
  clock: Clock;
  tokenCacheTtlMs?: number;
  tokenFailureCacheTtlMs?: number;
}

/** The outcome: a user, or why there is none. */
export type Authentication = { user: UserInfo } | { user?: undefined; reason: string };

const WS_TOKEN_PREFIX = "base64url.bearer.authorization.k8s.io.";

/** Finds out who sent a request; see the module doc. */
export class Authenticator {
  readonly #options: AuthenticatorOptions;
  readonly #tokens: TtlCache<TokenReviewResult>;

  constructor(options: AuthenticatorOptions) {
    this.#options = options;
    this.#tokens = new TtlCache({ clock: options.clock });
  }

  /** Authenticates `request`, whose TLS connection is `socket` (absent in in-process tests). */
  async authenticate(
    request: Request,
    socket: PeerSocket | undefined,
    options: { signal?: AbortSignal } = {},
  ): Promise<Authentication> {
    const fromCert = certificateUser(socket);
    if (fromCert) return { user: withAuthenticated(fromCert) };
    const badCert = certificateFailure(socket);
    if (badCert) return { reason: badCert };
    const token = requestToken(request.headers);
    if (typeof token === "object") return { reason: token.invalid };
    if (token !== undefined) return await this.#fromToken(token, options.signal);
    if (this.#options.anonymous) {
      return { user: { username: "system:anonymous", groups: ["system:unauthenticated"] } };
    }
    return { reason: "no client certificate and no bearer token" };
  }

  async #fromToken(token: string, signal?: AbortSignal): Promise<Authentication> {
    const reviewer = this.#options.tokenReviewer;
    if (!reviewer) return { reason: "bearer tokens are not accepted (no TokenReview client)" };
    const key = await sha256(token);
    let result = this.#tokens.get(key);
    if (!result) {
      result = await reviewer.review(token, { signal });
      const ttl = result.authenticated
        ? this.#options.tokenCacheTtlMs ?? 120_000
        : this.#options.tokenFailureCacheTtlMs ?? 10_000;
      this.#tokens.set(key, result, ttl);
    }
    if (!result.authenticated) {
      return { reason: `token rejected${result.error ? `: ${result.error}` : ""}` };
    }
    return { user: withAuthenticated(result.user) };
  }
}

/** The user of a verified client certificate, if the connection has one. */
export function certificateUser(socket: PeerSocket | undefined): UserInfo | undefined {
  // `authorized` alone is not enough: some Deno releases set it without a peer certificate
  // (denoland/deno#34366), so a subject with a CN is required as well.
  if (!socket?.authorized) return undefined;
  const subject = socket.getPeerCertificate?.()?.subject;
  const cn = subject?.CN;
  const username = Array.isArray(cn) ? cn[0] : cn;
  if (!username) return undefined;
  const orgs = subject?.O;
  const groups = orgs === undefined ? [] : Array.isArray(orgs) ? orgs : [orgs];
  return { username, groups };
}

/**
 * Why a client certificate was offered and failed verification, if it was. Node lets such a
 * connection in (`rejectUnauthorized: false`, so that token and anonymous requests work) and
 * reports the failure in `authorized`; the kubelet's x509 authenticator fails the request.
 */
export function certificateFailure(socket: PeerSocket | undefined): string | undefined {
  if (!socket || socket.authorized) return undefined;
  const peer = socket.getPeerCertificate?.();
  if (!peer || Object.keys(peer).length === 0) return undefined; // None offered.
  const why = socket.authorizationError;
  return `client certificate failed verification${why ? `: ${String(why)}` : ""}`;
}

/** The bearer token of a request: `Authorization: Bearer`, or the WebSocket protocol form. */
export function bearerToken(headers: Headers): string | undefined {
  const token = requestToken(headers);
  return typeof token === "string" ? token : undefined;
}

/** The offered token, or why the offered WebSocket token is not one. */
function requestToken(headers: Headers): string | { invalid: string } | undefined {
  const authorization = headers.get("authorization");
  const match = authorization?.match(/^\s*bearer\s+(\S+)\s*$/i);
  if (match) return match[1];
  // Browsers cannot set headers on WebSockets; Kubernetes clients then send the token as a
  // sub-protocol (kubernetes/apiserver pkg/authentication/request/websocket/protocol.go, which
  // fails the request when that protocol does not decode to a token).
  const protocols = headers.get("sec-websocket-protocol")?.split(",") ?? [];
  for (const protocol of protocols.map((p) => p.trim())) {
    if (!protocol.startsWith(WS_TOKEN_PREFIX)) continue;
    let token: string;
    try {
      const encoded = protocol.slice(WS_TOKEN_PREFIX.length).replace(/-/g, "+").replace(/_/g, "/");
      const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
      token = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return { invalid: "invalid base64.websocket.bearer.authorization token encoding" };
    }
    if (token.length === 0) return { invalid: "invalid bearer token" };
    return token;
  }
  return undefined;
}

function withAuthenticated(user: UserInfo): UserInfo {
  if (user.groups.includes("system:authenticated")) return user;
  return { ...user, groups: [...user.groups, "system:authenticated"] };
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
