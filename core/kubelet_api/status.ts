/**
 * Errors the kubelet API answers with, and the `v1 Status` JSON body it writes for them, as
 * the apiserver would (`kind: Status`, `status: Failure`, `reason`, `code`).
 * @module
 */

/** A `v1 Status` failure body. */
export interface StatusBody {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure";
  message: string;
  reason: string;
  code: number;
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  501: "NotImplemented",
  503: "ServiceUnavailable",
};

/** The Status body for `code` with `message`. */
export function statusBody(code: number, message: string, reason?: string): StatusBody {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason: reason ?? REASONS[code] ?? "Unknown",
    code,
  };
}

/** A JSON `Response` carrying {@link statusBody}. */
export function statusResponse(
  code: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(statusBody(code, message)) + "\n", {
    status: code,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** An error that the kubelet API answers with `status` and a Status body. */
export class HttpError extends Error {
  override name = "HttpError";
  readonly status: number;
  /** Extra response headers (`Retry-After` of a 429). */
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    message: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message, options);
    this.status = status;
    this.headers = options?.headers ?? {};
  }
}

/** True for an {@link HttpError}. */
export function isHttpError(err: unknown): err is HttpError {
  return err instanceof HttpError;
}
