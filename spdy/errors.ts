/**
 * Domain errors of the streaming protocols. Each is a small class with a stable `code`, checked
 * with a predicate, never by sniffing messages.
 * @module
 */

/** What was wrong with a SPDY byte stream; the connection that carried it must be closed. */
export type SpdyProtocolErrorCode =
  | "unsupported_version"
  | "invalid_frame"
  | "frame_too_large"
  | "truncated"
  | "invalid_header_block"
  | "header_block_too_large"
  | "compression_error"
  | "flood";

/** Options for {@link SpdyProtocolError}. */
export interface SpdyProtocolErrorOptions {
  /** The stream the bad frame named, when there was one. */
  streamId?: number;
  cause?: unknown;
}

/** Malformed or hostile SPDY input. Fatal for that connection, harmless for everything else. */
export class SpdyProtocolError extends Error {
  override name = "SpdyProtocolError";
  readonly code: SpdyProtocolErrorCode;
  readonly streamId?: number;

  constructor(
    code: SpdyProtocolErrorCode,
    message: string,
    options: SpdyProtocolErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.streamId = options.streamId;
  }
}

/** True when `err` is a {@link SpdyProtocolError}. */
export function isSpdyProtocolError(err: unknown): err is SpdyProtocolError {
  return err instanceof SpdyProtocolError;
}

/** Why a stream stopped before both sides finished it. */
export type SpdyStreamErrorCode =
  | "reset_by_peer"
  | "reset_locally"
  | "connection_closed"
  | "refused";

/** A stream ended abnormally: reset by either side, or its connection went away. */
export class SpdyStreamError extends Error {
  override name = "SpdyStreamError";
  readonly code: SpdyStreamErrorCode;
  readonly streamId: number;
  /** The RST_STREAM status code, for resets. */
  readonly status?: number;

  constructor(code: SpdyStreamErrorCode, streamId: number, message: string, status?: number) {
    super(message);
    this.code = code;
    this.streamId = streamId;
    this.status = status;
  }
}

/** True when `err` is a {@link SpdyStreamError}. */
export function isSpdyStreamError(err: unknown): err is SpdyStreamError {
  return err instanceof SpdyStreamError;
}

/** Why a remote command or port-forward exchange could not be set up. */
export type RemoteCommandErrorCode = "stream_timeout" | "connection_closed" | "invalid_request";

/** The client did not set up a remote command or port-forward as the protocol requires. */
export class RemoteCommandError extends Error {
  override name = "RemoteCommandError";
  readonly code: RemoteCommandErrorCode;

  constructor(code: RemoteCommandErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
  }
}

/** True when `err` is a {@link RemoteCommandError}. */
export function isRemoteCommandError(err: unknown): err is RemoteCommandError {
  return err instanceof RemoteCommandError;
}
