/**
 * Service-account tokens for projected volumes, as the kubelet's token manager keeps them
 * (kubernetes/kubernetes pkg/kubelet/token/token_manager.go): one TokenRequest per source,
 * bound to the pod, cached until 80 % of its lifetime (or 24 h) has passed. A refresh that
 * fails while the cached token is still valid keeps serving it and is retried after 1 s,
 * doubling to 1 min; the failures of a volume sync are collected for its report.
 * @module
 */
import type { Pod, VolumeProjection } from "kubernetes-types/core/v1.d.ts";
import { TransientError } from "../../../provider/mod.ts";
import type { VolumeSource } from "./volumes.ts";

/** What {@link TokenCache} needs. */
export interface TokenCacheOptions {
  source?: VolumeSource;
  /** For sources without `expirationSeconds`. */
  defaultExpirationSeconds: number;
  now: () => number;
}

/** One projected `serviceAccountToken` source of a volume. */
export interface TokenSourceRequest {
  volume: string;
  spec: NonNullable<VolumeProjection["serviceAccountToken"]>;
  signal?: AbortSignal;
}

/** The tokens of one pod's projected volumes; see the module doc. */
export class TokenCache {
  readonly #options: TokenCacheOptions;
  /** The last token per `volume/path`, its schedule and failed refreshes. */
  readonly #tokens = new Map<string, TokenEntry>();
  /** Refreshes that failed in the current sync while the old token was still valid. */
  #failures: string[] = [];

  constructor(options: TokenCacheOptions) {
    this.#options = options;
  }

  /** Starts a volume sync; the returned list fills with the refreshes that fail during it. */
  startSync(): string[] {
    this.#failures = [];
    return this.#failures;
  }

  /** The earliest time a token must be renewed (or a failed renewal retried), if any. */
  nextRefresh(): number | undefined {
    const times = [...this.#tokens.values()].map((t) => t.retryAt ?? t.refreshAt);
    return times.length ? Math.min(...times) : undefined;
  }

  /**
   * The token for one projected source: the cached one until its refresh time, else a new one
   * from a TokenRequest. A failed refresh keeps the cached token while it is valid and is
   * retried after 1 s, 2 s, 4 s... up to 1 min (the kubelet's token manager keeps serving the
   * old token too: kubernetes/kubernetes pkg/kubelet/token/token_manager.go).
   */
  async get(pod: Pod, request: TokenSourceRequest): Promise<string> {
    const { volume, spec, signal } = request;
    const key = `${volume}/${spec.path}`;
    const now = this.#options.now();
    const cached = this.#tokens.get(key);
    if (cached && now < (cached.retryAt ?? cached.refreshAt)) return cached.token;
    try {
      const entry = await this.#requestToken(pod, spec, now, signal);
      this.#tokens.set(key, entry);
      return entry.token;
    } catch (err) {
      if (!cached || now >= cached.expiresAt || signal?.aborted) throw err;
      cached.failures++;
      const delay = Math.min(1000 * 2 ** (cached.failures - 1), 60_000);
      cached.retryAt = now + delay;
      const message = err instanceof Error ? err.message : String(err);
      this.#failures.push(
        `service-account token for volume ${volume} not refreshed (${message}); the current one expires at ${
          new Date(cached.expiresAt).toISOString()
        }, next try in ${delay / 1000} s`,
      );
      return cached.token;
    }
  }

  async #requestToken(
    pod: Pod,
    spec: NonNullable<VolumeProjection["serviceAccountToken"]>,
    now: number,
    signal?: AbortSignal,
  ): Promise<TokenEntry> {
    if (!this.#options.source) {
      throw new TransientError("service-account token: the provider has no Kubernetes client");
    }
    const ttl = spec.expirationSeconds ?? this.#options.defaultExpirationSeconds;
    const answer = await this.#options.source.createToken(
      pod.metadata?.namespace ?? "default",
      pod.spec?.serviceAccountName ?? "default",
      {
        spec: {
          audiences: spec.audience ? [spec.audience] : [],
          expirationSeconds: ttl,
          boundObjectRef: {
            apiVersion: "v1",
            kind: "Pod",
            name: pod.metadata?.name,
            uid: pod.metadata?.uid,
          },
        },
      },
      signal,
    );
    const token = answer.status?.token;
    if (!token) throw new TransientError("TokenRequest answered without a token");
    const expiresAt = Date.parse(answer.status?.expirationTimestamp ?? "") || now + ttl * 1000;
    // Renew at 80 % of the lifetime, or after 24 h, whichever is first.
    const refreshAt = now + Math.min(0.8 * (expiresAt - now), 24 * 3_600_000);
    return { token, expiresAt, refreshAt, failures: 0 };
  }
}

/** A cached service-account token. */
interface TokenEntry {
  token: string;
  expiresAt: number;
  refreshAt: number;
  /** Failed refreshes in a row, and when to try again after the last one. */
  failures: number;
  retryAt?: number;
}
