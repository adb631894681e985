/**
 * Maps failures of cluster B's apiserver to the provider errors the core acts on.
 * @module
 */
import {
  isConnectionError,
  isForbidden,
  isInvalid,
  isKubeApiError,
  isKubeNotFound,
} from "../../k8s/mod.ts";
import {
  InvalidInputError,
  NotFoundError,
  NotSupportedError,
  TransientError,
} from "../../provider/mod.ts";

/** The provider error for a failed call to B: `what` says what was being done. */
export function downstreamError(what: string, err: unknown): Error {
  const message = `${what} in the downstream cluster: ${err instanceof Error ? err.message : err}`;
  if (isKubeNotFound(err)) return new NotFoundError(message, { cause: err });
  if (isInvalid(err)) return new InvalidInputError(message, { cause: err });
  if (isForbidden(err)) {
    return new TransientError(
      `${message}; grant the downstream identity this verb (see the provider's README)`,
      { cause: err },
    );
  }
  if (isKubeApiError(err) && (err as { code: number }).code === 400) {
    return new InvalidInputError(message, { cause: err });
  }
  if (isConnectionError(err)) return new TransientError(message, { cause: err });
  if (err instanceof NotSupportedError) return err;
  return new TransientError(message, { cause: err });
}
