/**
 * Kubernetes remote command (exec/attach) over a SPDY session, as the kubelet serves it
 * (cri-streaming `remotecommand/httpstream.go`, `exec.go`; client side client-go
 * `tools/remotecommand/v2.go … v4.go`): wait for the client's streams by `streamtype`, hand
 * them out, and end with the exit status on the error stream.
 * @module
 */
import { type Clock, realClock } from "../../../base/clock.ts";
import { RemoteCommandError } from "../../../spdy/errors.ts";
import { remoteCommandVersion } from "./negotiation.ts";
import type { SpdySession } from "../../../spdy/session.ts";
import type { SpdyStream } from "../../../spdy/stream.ts";
import { headerValue } from "../../../spdy/headers.ts";
import { RstStatus } from "../../../spdy/frames.ts";
import { latestResizes, type TerminalSize } from "./resize.ts";
import { deadline } from "../../../base/deadline.ts";

export type { TerminalSize };

/** Options for {@link acceptRemoteCommand}. */
export interface RemoteCommandOptions {
  /** The negotiated sub-protocol, e.g. `v4.channel.k8s.io`. */
  protocol: string;
  expectStdin: boolean;
  expectStdout: boolean;
  expectStderr: boolean;
  tty: boolean;
  /** How long the client has to create every stream; default 30 s (`DefaultStreamCreationTimeout`). */
  timeoutMs?: number;
  /** How long `finish` waits for the client to close the connection; default 10 s. */
  lingerMs?: number;
  signal?: AbortSignal;
  clock?: Clock;
}

/** How the command ended: an exit code, or an error that kept it from running or finishing. */
export interface RemoteCommandResult {
  exitCode?: number;
  error?: string;
}

/** The streams of one exec/attach, from the container's point of view. */
export interface RemoteCommandStreams {
  protocol: string;
  stdin?: ReadableStream<Uint8Array>;
  stdout?: WritableStream<Uint8Array>;
  stderr?: WritableStream<Uint8Array>;
  /** Terminal sizes from the client (TTY on v3+), until it closes the resize stream. */
  resize?: AsyncIterable<TerminalSize>;
  /**
   * Ends the exchange: FIN on stdout and stderr (even while a writer holds them), the status on
   * the error stream, FIN on stdin, then a graceful close of the session.
   */
  finish(result: RemoteCommandResult): Promise<void>;
}

const STREAM_TYPES = ["error", "stdin", "stdout", "stderr", "resize"] as const;
type StreamType = typeof STREAM_TYPES[number];

/**
 * Collects the client's streams (each answered with SYN_REPLY as it arrives, in any order) and
 * returns them once all expected ones are there: error, plus stdin/stdout/stderr as asked, plus
 * resize for a TTY on v3 and later. A stream of an unknown type, a second stream of a type, or
 * any stream opened after these is refused with RST_STREAM (the kubelet logs and ignores
 * them; unread, they would hold what the client sends). On timeout or a closed connection it closes the session and throws
 * {@link RemoteCommandError}.
 */
export async function acceptRemoteCommand(
  session: SpdySession,
  options: RemoteCommandOptions,
): Promise<RemoteCommandStreams> {
  const version = remoteCommandVersion(options.protocol);
  if (version === 0) throw new TypeError(`Unknown remote command protocol ${options.protocol}`);
  const clock = options.clock ?? realClock;
  const wanted = new Set<StreamType>(["error"]);
  if (options.expectStdin) wanted.add("stdin");
  if (options.expectStdout) wanted.add("stdout");
  if (options.expectStderr) wanted.add("stderr");
  if (options.tty && version >= 3) wanted.add("resize");
  const found = new Map<StreamType, SpdyStream>();
  const limit = deadline(clock, options.timeoutMs ?? 30_000, options.signal);
  try {
    while (found.size < wanted.size) {
      const stream = await session.accept({ signal: limit.signal });
      if (!stream) {
        throw limit.signal.aborted
          ? new RemoteCommandError(
            "stream_timeout",
            "timed out waiting for client to create streams",
          )
          : new RemoteCommandError("connection_closed", "the client closed the connection early");
      }
      const type = headerValue(stream.headers, "streamtype") as StreamType;
      if (!STREAM_TYPES.includes(type) || found.has(type)) {
        // Nobody would read it: refuse it rather than buffer what the client sends on it.
        stream.reset(RstStatus.refusedStream);
        continue;
      }
      await stream.reply();
      found.set(type, stream);
    }
    void refuseLaterStreams(session);
  } catch (err) {
    session.close();
    throw err;
  } finally {
    limit.cancel();
  }
  const pick = (type: StreamType) => wanted.has(type) ? found.get(type) : undefined;
  const stdin = pick("stdin"), stdout = pick("stdout"), stderr = pick("stderr");
  const resize = pick("resize");
  return {
    protocol: options.protocol,
    stdin: stdin?.readable,
    stdout: stdout?.writable,
    stderr: stderr?.writable,
    resize: resize ? latestResizes(resize.readable) : undefined,
    finish: async (result) => {
      await Promise.all([stdout, stderr].map((s) => s?.closeWrite().catch(() => {})));
      const error = found.get("error")!;
      const status = encodeRemoteCommandStatus(version, result);
      if (status.length > 0) await writeAll(error, status).catch(() => {});
      await Promise.all(
        [error, stdin, resize].map((s) => s?.closeWrite().catch(() => {})),
      );
      await session.shutdown({ timeoutMs: options.lingerMs ?? 10_000 });
    },
  };
}

/** Streams opened once the command runs are not used: refuse each until the session ends. */
async function refuseLaterStreams(session: SpdySession): Promise<void> {
  for (;;) {
    const stream = await session.accept();
    if (!stream) return;
    stream.reset(RstStatus.refusedStream);
  }
}

async function writeAll(stream: SpdyStream, bytes: Uint8Array): Promise<void> {
  const writer = stream.writable.getWriter();
  try {
    await writer.write(bytes);
  } finally {
    writer.releaseLock();
  }
}

const encoder = new TextEncoder();

/**
 * The bytes the kubelet writes on the error stream when a command ends. v4/v5: one
 * metav1.Status JSON (`v4WriteStatusFunc`): Success; or Failure with reason NonZeroExitCode and
 * a cause of type ExitCode (serialised as `"reason"`) whose message is the code, which
 * client-go parses as a uint8; or an InternalError with code 500. v1–v3: nothing on success,
 * else the status message as plain text (`v1WriteStatusFunc`).
 */
export function encodeRemoteCommandStatus(
  version: number,
  result: RemoteCommandResult,
): Uint8Array {
  const status = remoteCommandStatus(result);
  if (version >= 4) return encoder.encode(JSON.stringify(status));
  return status.status === "Success" ? new Uint8Array(0) : encoder.encode(status.message);
}

/** A metav1.Status, with fields in Go's serialisation order. */
export interface RemoteCommandStatus {
  metadata: Record<string, never>;
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: { causes: Array<{ reason?: string; message: string }> };
  code?: number;
}

/** The metav1.Status for a result; see {@link encodeRemoteCommandStatus}. */
export function remoteCommandStatus(result: RemoteCommandResult): RemoteCommandStatus {
  if (result.error !== undefined) {
    return {
      metadata: {},
      status: "Failure",
      message: `Internal error occurred: ${result.error}`,
      reason: "InternalError",
      details: { causes: [{ message: result.error }] },
      code: 500,
    };
  }
  const code = result.exitCode ?? 0;
  if (!Number.isInteger(code) || code < 0 || code > 255) {
    throw new RangeError(`An exit code must be an integer from 0 to 255, not ${code}`);
  }
  if (code === 0) return { metadata: {}, status: "Success" };
  return {
    metadata: {},
    status: "Failure",
    message: `command terminated with non-zero exit code: exit status ${code}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(code) }] },
  };
}
