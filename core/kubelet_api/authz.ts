/**
 * Authorization as the kubelet does it: every request becomes a check on `nodes/<node>` with a
 * verb from the HTTP method and a subresource from the path (kubernetes/kubernetes
 * pkg/kubelet/server/auth.go `GetRequestAttributes`, with `KubeletFineGrainedAuthz` on as in
 * 1.33+: `/pods` and `/healthz` try their own subresource first, then `proxy`). Decisions come
 * from an {@link AccessReviewer} and are cached: allows 5 min, denies 30 s by default.
 * @module
 */
import type { Clock } from "../../base/clock.ts";
import type { AccessReviewer, UserInfo } from "./reviews.ts";
import { TtlCache } from "../../base/ttl_cache.ts";

/** The verb and candidate subresources for one request; any allow wins. */
export interface RequestAttributes {
  verb: string;
  subresources: string[];
}

const VERBS: Record<string, string> = {
  POST: "create",
  GET: "get",
  HEAD: "get",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
};

// Path prefix -> subresources, in the order auth.go checks them.
const SUBRESOURCES: Array<[string, string[]]> = [
  ["/stats", ["stats"]],
  ["/metrics", ["metrics"]],
  ["/logs", ["log"]],
  ["/checkpoint", ["checkpoint"]],
  ["/pods", ["pods", "proxy"]],
  ["/runningpods", ["pods", "proxy"]],
  ["/healthz", ["healthz", "proxy"]],
  ["/livez", ["healthz", "proxy"]],
  ["/readyz", ["healthz", "proxy"]],
  ["/configz", ["configz", "proxy"]],
  ["/statusz", ["statusz", "proxy"]],
];

/** The kubelet's verb-by-method and subresource-by-path mapping. */
export function requestAttributes(method: string, path: string): RequestAttributes {
  const verb = VERBS[method.toUpperCase()] ?? method.toLowerCase();
  for (const [prefix, subresources] of SUBRESOURCES) {
    if (isSubpath(path, prefix)) return { verb, subresources };
  }
  return { verb, subresources: ["proxy"] };
}

/** `path` is `prefix` or below it (auth.go `isSubpath`). */
function isSubpath(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(prefix + "/");
}

/** Options for {@link Authorizer}. */
export interface AuthorizerOptions {
  reviewer: AccessReviewer;
  nodeName: string;
  clock: Clock;
  allowCacheTtlMs?: number;
  denyCacheTtlMs?: number;
}

/** The outcome of {@link Authorizer.authorize}. */
export interface AuthorizationResult extends RequestAttributes {
  allowed: boolean;
  reason?: string;
}

/** Decides requests with cached reviews; see the module doc. */
export class Authorizer {
  readonly #options: AuthorizerOptions;
  readonly #cache: TtlCache<{ allowed: boolean; reason?: string }>;

  constructor(options: AuthorizerOptions) {
    this.#options = options;
    this.#cache = new TtlCache({ clock: options.clock });
  }

  /** Checks each candidate subresource in order; the first allow wins. */
  async authorize(
    user: UserInfo,
    method: string,
    path: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<AuthorizationResult> {
    const attributes = requestAttributes(method, path);
    let reason: string | undefined;
    for (const subresource of attributes.subresources) {
      const decision = await this.#decide(user, attributes.verb, subresource, options.signal);
      if (decision.allowed) return { ...attributes, allowed: true, reason: decision.reason };
      reason ??= decision.reason;
    }
    return { ...attributes, allowed: false, reason };
  }

  async #decide(user: UserInfo, verb: string, subresource: string, signal?: AbortSignal) {
    const key = JSON.stringify([
      user.username,
      user.uid,
      user.groups,
      user.extra,
      verb,
      subresource,
    ]);
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const decision = await this.#options.reviewer.review(user, {
      verb,
      resource: "nodes",
      subresource,
      name: this.#options.nodeName,
    }, { signal });
    const ttl = decision.allowed
      ? this.#options.allowCacheTtlMs ?? 300_000
      : this.#options.denyCacheTtlMs ?? 30_000;
    this.#cache.set(key, decision, ttl);
    return decision;
  }
}
