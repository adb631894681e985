/**
 * A bearer token read from a file and re-read regularly, so that rotated service-account tokens
 * keep working (client-go `transport/token_source.go`, `NewCachedFileTokenSource`, re-reads once a
 * minute).
 * @module
 */
import { type Clock, realClock } from "../../base/clock.ts";
import { KubeConfigError } from "../errors.ts";
import type { Credentials, CredentialSource } from "./types.ts";

/** Options for {@link TokenFileSource}. */
export interface TokenFileSourceOptions {
  /** How long a read token is trusted before the file is read again; default one minute. */
  maxAgeMs?: number;
  clock?: Clock;
  /** Used in error messages, e.g. `users[0].user.tokenFile` or `in-cluster token`. */
  field?: string;
  /** The kubeconfig the path came from, for error messages. */
  kubeconfigPath?: string;
}

/** Reads a bearer token from a file, caching it for a while and after every successful read. */
export class TokenFileSource implements CredentialSource {
  readonly description: string;
  #path: string;
  #maxAgeMs: number;
  #clock: Clock;
  #field?: string;
  #kubeconfigPath?: string;
  #cached?: { token: string; readAt: number };

  constructor(path: string, options: TokenFileSourceOptions = {}) {
    this.#path = path;
    this.#maxAgeMs = options.maxAgeMs ?? 60_000;
    this.#clock = options.clock ?? realClock;
    this.#field = options.field;
    this.#kubeconfigPath = options.kubeconfigPath;
    this.description = `token file ${path}`;
  }

  async get(): Promise<Credentials> {
    const now = this.#clock.now();
    if (this.#cached && now - this.#cached.readAt < this.#maxAgeMs) {
      return { token: this.#cached.token };
    }
    try {
      const token = (await Deno.readTextFile(this.#path)).trim();
      if (token === "") throw new Error("the file is empty");
      this.#cached = { token, readAt: now };
      return { token };
    } catch (err) {
      // A token that was good a minute ago beats no token while the file is being replaced.
      if (this.#cached) return { token: this.#cached.token };
      throw new KubeConfigError(
        `${this.#field ? "" : "bearer token file "}${this.#path} cannot be read: ` +
          `${(err as Error).message}; make sure the file exists, is readable and holds a token`,
        { path: this.#kubeconfigPath, field: this.#field, cause: err },
      );
    }
  }

  invalidate(): void {
    if (this.#cached) this.#cached.readAt = -Infinity;
  }
}
