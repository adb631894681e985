/**
 * Errors raised by the Kubernetes client, and predicates to tell them apart.
 *
 * Callers check errors with the predicates (`isKubeNotFound(err)`), never by reading fields.
 * @module
 */
import type { Status } from "kubernetes-types/meta/v1.d.ts";

/** Reasons the apiserver gives for common HTTP codes, used when an answer carries no Status. */
const REASON_BY_CODE: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Gone",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** Options for {@link KubeApiError}. */
export interface KubeApiErrorOptions {
  /** HTTP method of the failed request. */
  method: string;
  /** Path (with query) of the failed request. */
  path: string;
  /** The `Status` object the apiserver sent, when it sent one. */
  status?: Status;
  cause?: unknown;
}

/** The apiserver answered with a failure (a non-2xx code, or an ERROR event in a watch). */
export class KubeApiError extends Error {
  override name = "KubeApiError";
  /** HTTP status code (for watch ERROR events, the code inside the Status). */
  readonly code: number;
  /** Machine-readable reason, e.g. `NotFound`, `AlreadyExists`, `Expired`. */
  readonly reason: string;
  /** The apiserver's `Status`, if any. */
  readonly status?: Status;
  readonly method: string;
  readonly path: string;

  constructor(code: number, options: KubeApiErrorOptions) {
    const reason = options.status?.reason || REASON_BY_CODE[code] || `HTTP${code}`;
    const detail = options.status?.message ?? "the apiserver gave no details";
    super(`${options.method} ${options.path}: ${code} ${reason}: ${detail}`, {
      cause: options.cause,
    });
    this.code = code;
    this.reason = reason;
    this.status = options.status;
    this.method = options.method;
    this.path = options.path;
  }
}

/** A kubeconfig, in-cluster configuration or credential plugin is missing or broken. */
export class KubeConfigError extends Error {
  override name = "KubeConfigError";
  /** File the problem is in, when there is one. */
  readonly path?: string;
  /** Dotted field path inside that file, e.g. `users[0].user.client-key-data`. */
  readonly field?: string;

  constructor(message: string, options: { path?: string; field?: string; cause?: unknown } = {}) {
    // Reads as "kubeconfig /a/b: users[0].user.token is missing; ...".
    const subject = options.field ? `${options.field} ${message}` : message;
    super(options.path ? `kubeconfig ${options.path}: ${subject}` : subject, {
      cause: options.cause,
    });
    this.path = options.path;
    this.field = options.field;
  }
}

/** The apiserver could not be reached (DNS, refused connection, TLS failure, reset). */
export class KubeConnectionError extends Error {
  override name = "KubeConnectionError";
  /** The URL that could not be reached. */
  readonly url: string;

  constructor(url: string, options: { cause?: unknown; hint?: string } = {}) {
    const why = innermostMessage(options.cause);
    const hint = options.hint ??
      "check that the apiserver is running and that the server URL and CA are right";
    super(`cannot reach the apiserver at ${url}: ${why}; ${hint}`, { cause: options.cause });
    this.url = url;
  }
}

/** The most specific message in a cause chain (fetch wraps the real reason as its cause). */
function innermostMessage(err: unknown): string {
  let message = String(err);
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    message = e.message.replace(/^error sending request for url \([^)]*\): /, "");
  }
  return message;
}

/**
 * True for every {@link KubeApiError}, also one thrown by another copy of this module (a provider
 * loaded by URL has its own): checked by name and code, not by class only.
 */
export function isKubeApiError(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError ||
    (err instanceof Error && err.name === "KubeApiError" &&
      typeof (err as { code?: unknown }).code === "number");
}

/** True for a {@link KubeConfigError}. */
export function isKubeConfigError(err: unknown): err is KubeConfigError {
  return err instanceof KubeConfigError;
}

/** True for a {@link KubeConnectionError}. */
export function isConnectionError(err: unknown): err is KubeConnectionError {
  return err instanceof KubeConnectionError;
}

function hasCode(err: unknown, code: number, reason?: string): boolean {
  if (!isKubeApiError(err)) return false;
  return err.code === code || (reason !== undefined && err.reason === reason);
}

/**
 * The object (or its namespace) does not exist.
 *
 * @example Usage
 * ```ts
 * import { isKubeNotFound } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.ok(!isKubeNotFound(new Error("connection refused")));
 * ```
 */
export function isKubeNotFound(err: unknown): boolean {
  return hasCode(err, 404, "NotFound");
}

/** A create found an object with the same name. */
export function isAlreadyExists(err: unknown): boolean {
  return isKubeApiError(err) && err.reason === "AlreadyExists";
}

/** A write lost a race: stale resourceVersion, failed precondition, or an existing name. */
export function isConflict(err: unknown): boolean {
  return hasCode(err, 409, "Conflict");
}

/** A resourceVersion or continue token is too old; relist. */
export function isGone(err: unknown): boolean {
  return isKubeApiError(err) &&
    (err.code === 410 || err.reason === "Expired" || err.reason === "Gone");
}

/** The caller is authenticated but not allowed to do this. */
export function isForbidden(err: unknown): boolean {
  return hasCode(err, 403, "Forbidden");
}

/**
 * The namespace is being deleted, so nothing new may be created in it (the apiserver's
 * Forbidden with cause `NamespaceTerminating`, as client-go's `HasStatusCause` checks).
 */
export function isNamespaceTerminating(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 403 &&
    (err.status?.details?.causes ?? []).some((c) => c.reason === "NamespaceTerminating");
}

/** The credentials were missing, wrong or expired. */
export function isUnauthorized(err: unknown): boolean {
  return hasCode(err, 401, "Unauthorized");
}

/** The apiserver is throttling this client (after the retries ran out). */
export function isTooManyRequests(err: unknown): boolean {
  return hasCode(err, 429, "TooManyRequests");
}

/** The object failed validation. */
export function isInvalid(err: unknown): boolean {
  return hasCode(err, 422, "Invalid");
}

/** The apiserver timed out or is unavailable; retrying later may work. */
export function isServerUnavailable(err: unknown): boolean {
  return isKubeApiError(err) &&
    (err.code >= 500 || err.reason === "Timeout" || err.reason === "ServerTimeout");
}
