/**
 * Errors a provider throws so the core can tell what to do next: give up on the pod
 * ({@link InvalidInputError}), retry later ({@link TransientError}), treat the pod as gone
 * ({@link NotFoundError}) or answer 501 ({@link NotSupportedError}). Re-exported by
 * `provider/mod.ts`; virtual-kubelet's equivalents are in virtual-kubelet/virtual-kubelet errdefs/.
 * @module
 */

/** Options shared by the provider errors. */
export interface ProviderErrorOptions {
  /** The error behind this one (the backend's own), kept as the standard `Error.cause`. */
  cause?: unknown;
}

/** The pod (or request) can never succeed as given; the core marks the pod Failed, no retry. */
export class InvalidInputError extends Error {
  /** The error's name, compared by the predicates. */
  override name = "InvalidInputError";
  /** An error with `message` and, optionally, its `cause`. */
  constructor(message: string, options?: ProviderErrorOptions) {
    super(message, options);
  }
}

/** Options for {@link TransientError}. */
export interface TransientErrorOptions extends ProviderErrorOptions {
  /** The earliest useful retry, if the backend said (e.g. HTTP Retry-After). */
  retryAfterMs?: number;
}

/** Worth trying again later (backend busy, quota, a dependency not there yet). */
export class TransientError extends Error {
  /** The error's name, compared by the predicates. */
  override name = "TransientError";
  /** The earliest useful retry, if known. */
  readonly retryAfterMs?: number;
  /** An error with `message`, its `cause` and when to retry. */
  constructor(message: string, options?: TransientErrorOptions) {
    super(message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** The pod or container does not exist in the provider (kubelet API: 404). */
export class NotFoundError extends Error {
  /** The error's name, compared by the predicates. */
  override name = "NotFoundError";
  /** An error with `message` and, optionally, its `cause`. */
  constructor(message: string, options?: ProviderErrorOptions) {
    super(message, options);
  }
}

/** The provider cannot do this (kubelet API: 501); e.g. attach on a backend without it. */
export class NotSupportedError extends Error {
  /** The error's name, compared by the predicates. */
  override name = "NotSupportedError";
  /** An error with `message` and, optionally, its `cause`. */
  constructor(message: string, options?: ProviderErrorOptions) {
    super(message, options);
  }
}

/** Options for {@link BackendUnreachableError}. */
export interface BackendUnreachableOptions extends ProviderErrorOptions {
  /** What could not be reached (an endpoint, service or host), without credentials. */
  endpoint: string;
  /** A CamelCase reason for the node's `ProviderReachable` condition; default `BackendUnreachable`. */
  reason?: string;
}

/**
 * The provider cannot reach its backend's control plane (thrown by `ping`): the backend's API is
 * down or unreachable, which says nothing about the workloads themselves. The core keeps the
 * node Ready for `--provider-outage-grace` and its pods' last status meanwhile.
 */
export class BackendUnreachableError extends Error {
  /** The error's name, compared by the predicates. */
  override name = "BackendUnreachableError";
  /** What could not be reached. */
  readonly endpoint: string;
  /** The condition's reason. */
  readonly reason: string;
  /** An error with `message`, what could not be reached, and its `cause`. */
  constructor(message: string, options: BackendUnreachableOptions) {
    super(message, options);
    this.endpoint = options.endpoint;
    this.reason = options.reason ?? "BackendUnreachable";
  }
}

// The predicates compare `name` as well as the class: an external provider loaded from a URL
// may carry its own copy of this module, whose classes are not ours.
function hasName(err: unknown, name: string): boolean {
  return err instanceof Error && err.name === name;
}

/**
 * True for an {@link InvalidInputError} (from any copy of this module).
 *
 * @example Usage
 * ```ts
 * import { InvalidInputError, isInvalidInput } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.ok(isInvalidInput(new InvalidInputError("no such instance type")));
 * assert.ok(!isInvalidInput(new Error("no such instance type")));
 * ```
 */
export function isInvalidInput(err: unknown): err is InvalidInputError {
  return err instanceof InvalidInputError || hasName(err, "InvalidInputError");
}

/**
 * True for a {@link TransientError} (from any copy of this module).
 *
 * @example Usage
 * ```ts
 * import { isTransient, TransientError } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const err = new TransientError("quota exceeded", { retryAfterMs: 5_000 });
 * assert.ok(isTransient(err) && err.retryAfterMs === 5_000);
 * ```
 */
export function isTransient(err: unknown): err is TransientError {
  return err instanceof TransientError || hasName(err, "TransientError");
}

/**
 * True for a {@link NotFoundError} (from any copy of this module).
 *
 * @example Usage
 * ```ts
 * import { isNotFound, NotFoundError } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.ok(isNotFound(new NotFoundError("pod shop/web-0 is not running here")));
 * ```
 */
export function isNotFound(err: unknown): err is NotFoundError {
  return err instanceof NotFoundError || hasName(err, "NotFoundError");
}

/**
 * True for a {@link NotSupportedError} (from any copy of this module).
 *
 * @example Usage
 * ```ts
 * import { isNotSupported, NotSupportedError } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.ok(isNotSupported(new NotSupportedError("this backend cannot attach")));
 * ```
 */
export function isNotSupported(err: unknown): err is NotSupportedError {
  return err instanceof NotSupportedError || hasName(err, "NotSupportedError");
}

/** The streaming requests of the kubelet API, as its routes name them. */
export type StreamingKind = "exec" | "attach" | "portForward";

/**
 * The kubelet API's 501 text for a streaming request this node's provider cannot serve; the
 * core answers it for a provider without the method, {@link refuseStreaming} for a backend that
 * has no such channel.
 *
 * @example Usage
 * ```ts
 * import { notSupportedText } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(notSupportedText("attach"), "attach is not supported by this node's provider");
 * ```
 */
export function notSupportedText(kind: StreamingKind): string {
  return `${kind} is not supported by this node's provider`;
}

/**
 * What a provider answers for exec, attach or port-forward that its backend cannot do: a
 * rejection with a {@link NotSupportedError} that gives the kubelet API's 501 text and `why` —
 * after `check`, which throws (a {@link NotFoundError}) for a pod or container the provider does
 * not have, so that such a request is still a 404.
 *
 * @example Usage
 * ```ts
 * import { isNotSupported, refuseStreaming } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const err = await refuseStreaming("attach", "the backend has no attach call").catch((e) => e);
 * assert.ok(isNotSupported(err));
 * assert.equal(
 *   err.message,
 *   "attach is not supported by this node's provider: the backend has no attach call",
 * );
 * ```
 */
export function refuseStreaming(
  kind: StreamingKind,
  why: string,
  check?: () => unknown,
): Promise<never> {
  return new Promise((_, reject) => {
    check?.(); // a throw here rejects with it
    reject(new NotSupportedError(`${notSupportedText(kind)}: ${why}`));
  });
}

/** True for a {@link BackendUnreachableError} (from any copy of this module). */
export function isBackendUnreachable(err: unknown): err is BackendUnreachableError {
  return hasName(err, "BackendUnreachableError");
}
