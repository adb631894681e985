/**
 * The Zun API as the zun provider calls it: keystone's token on every request (renewed before
 * it expires and once on a 401), the container service's endpoint from the catalog, and the
 * microversion chosen once from the server's root document (`GET /`: `min_version`,
 * `max_version`, zun/api/controllers/root.py) and sent as `OpenStack-API-Version: container X.Y`.
 * Errors name the method, the URL and Zun's own message.
 * @module
 */
import { InvalidInputError, NotFoundError, TransientError } from "../../../provider/mod.ts";
import type { Credentials } from "../credentials.ts";
import { authenticate, type Session } from "./keystone.ts";

/** The microversions this provider speaks: 1.32 moved capsules to `name`, `labels` and a
 * `restart_policy` object; 1.40 is the newest of Zun 18.0.0, the release it was tested with. */
export const SUPPORTED_VERSIONS = { min: "1.32", max: "1.40" } as const;

/** A version `1.N` as a number pair, for comparing. */
function parts(version: string): [number, number] {
  const [major, minor] = version.split(".").map(Number);
  return [major, minor ?? 0];
}

function compare(a: string, b: string): number {
  const [x, y] = [parts(a), parts(b)];
  return x[0] - y[0] || x[1] - y[1];
}

/** The newest version both sides speak, or an error naming both ranges. */
export function chooseVersion(server: { min: string; max: string }, wanted?: string): string {
  const low = compare(server.min, SUPPORTED_VERSIONS.min) > 0 ? server.min : SUPPORTED_VERSIONS.min;
  const high = compare(server.max, SUPPORTED_VERSIONS.max) < 0
    ? server.max
    : SUPPORTED_VERSIONS.max;
  if (wanted) {
    if (compare(wanted, low) < 0 || compare(wanted, high) > 0) {
      throw new InvalidInputError(
        `apiVersion ${wanted} is outside what both sides speak (server ${server.min}–${server.max}, provider ${SUPPORTED_VERSIONS.min}–${SUPPORTED_VERSIONS.max})`,
      );
    }
    return wanted;
  }
  if (compare(low, high) > 0) {
    throw new InvalidInputError(
      `this Zun speaks container API ${server.min}–${server.max}, the zun provider needs ${SUPPORTED_VERSIONS.min}–${SUPPORTED_VERSIONS.max} (Zun 7.0.0/Train or newer)`,
    );
  }
  return high;
}

/** An answer of Zun's that is not a success. */
export class ZunApiError extends Error {
  override name = "ZunApiError";
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Zun's error text: `{"errors": [{"title", "detail"}]}` (zun/api/hooks.py, wsme faults). */
function zunMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { errors?: { title?: string; detail?: string }[] };
    const first = body.errors?.[0];
    if (first) return first.detail || first.title || text;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500);
}

/** What the client needs. */
export interface ZunApiOptions {
  credentials: Credentials;
  /** The catalog's service type (default `container`). */
  serviceType: string;
  /** Each call's deadline, ms. */
  requestTimeoutMs: number;
  /** A fixed microversion instead of the newest both sides speak. */
  apiVersion?: string;
  /** Now, epoch ms (the token's expiry is wall-clock time). */
  now?: () => number;
}

/** A call's answer: status and parsed body. */
export interface ZunAnswer<T = unknown> {
  status: number;
  body: T;
}

/** The container service API; see the module doc. */
export class ZunApi {
  readonly #o: ZunApiOptions;
  #session?: Promise<Session>;
  #version?: Promise<string>;

  constructor(options: ZunApiOptions) {
    this.#o = options;
  }

  /** The endpoint from the catalog (authenticating if needed). */
  async endpoint(signal?: AbortSignal): Promise<string> {
    return (await this.#currentSession(signal)).endpoint;
  }

  /** The project of the token. */
  async projectId(signal?: AbortSignal): Promise<string | undefined> {
    return (await this.#currentSession(signal)).projectId;
  }

  /** The user of the token: Zun's `user_id` of every object this provider makes. */
  async userId(signal?: AbortSignal): Promise<string | undefined> {
    return (await this.#currentSession(signal)).userId;
  }

  /** The microversion in use, read from the server's root document on first use. */
  version(signal?: AbortSignal): Promise<string> {
    this.#version ??= this.#negotiate(signal).catch((err) => {
      this.#version = undefined;
      throw err;
    });
    return this.#version;
  }

  async #negotiate(signal?: AbortSignal): Promise<string> {
    const endpoint = await this.endpoint(signal);
    const root = new URL("/", endpoint).href;
    const answer = await this.#fetch(root, { method: "GET" }, signal);
    const text = await answer.text();
    if (!answer.ok) {
      throw new TransientError(`Zun's root document ${root} answered ${answer.status}: ${text}`);
    }
    const doc = JSON.parse(text) as {
      default_version?: { min_version?: string; max_version?: string };
      versions?: { id?: string; min_version?: string; max_version?: string }[];
    };
    const v1 = doc.versions?.find((v) => v.id === "v1") ?? doc.default_version;
    if (!v1?.min_version || !v1.max_version) {
      throw new InvalidInputError(
        `${root} has no min_version/max_version: is ${endpoint} a Zun container API?`,
      );
    }
    return chooseVersion({ min: v1.min_version, max: v1.max_version }, this.#o.apiVersion);
  }

  /** One call; a 404 throws a {@link NotFoundError}, any other failure a {@link ZunApiError}. */
  async call<T>(
    method: string,
    path: string,
    options: { body?: unknown; signal?: AbortSignal; notFoundOk?: boolean } = {},
  ): Promise<ZunAnswer<T>> {
    const version = await this.version(options.signal);
    for (let attempt = 0;; attempt++) {
      const session = await this.#currentSession(options.signal);
      const url = `${session.endpoint}${path}`;
      const answer = await this.#fetch(url, {
        method,
        headers: {
          "X-Auth-Token": session.token,
          "OpenStack-API-Version": `container ${version}`,
          Accept: "application/json",
          ...(options.body !== undefined ? { "Content-Type": "application/json" } : {}),
        },
        body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
      }, options.signal);
      const text = await answer.text();
      if (answer.status === 401 && attempt === 0) {
        this.#session = undefined; // revoked or expired early: one new token, one retry
        continue;
      }
      if (answer.ok) {
        return { status: answer.status, body: (text ? JSON.parse(text) : undefined) as T };
      }
      const message = `Zun ${method} ${url} answered ${answer.status}: ${zunMessage(text)}`;
      if (answer.status === 404) throw new NotFoundError(message);
      throw new ZunApiError(answer.status, message);
    }
  }

  #currentSession(signal?: AbortSignal): Promise<Session> {
    const now = this.#o.now?.() ?? Date.now();
    const current = this.#session;
    if (current) {
      return current.then((s) => s.expiresAtMs - 60_000 > now ? s : this.#renew(signal));
    }
    return this.#renew(signal);
  }

  #renew(signal?: AbortSignal): Promise<Session> {
    const next = authenticate(this.#o.credentials, this.#o.serviceType, signal);
    this.#session = next;
    next.catch(() => {
      if (this.#session === next) this.#session = undefined;
    });
    return next;
  }

  async #fetch(url: string, init: RequestInit, signal?: AbortSignal): Promise<Response> {
    const deadline = AbortSignal.timeout(this.#o.requestTimeoutMs);
    try {
      return await fetch(url, {
        ...init,
        signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      const why = deadline.aborted
        ? `no answer within requestTimeout (${this.#o.requestTimeoutMs} ms)`
        : (err as Error).message;
      throw new TransientError(`cannot reach Zun at ${url}: ${why}`, { cause: err });
    }
  }
}
