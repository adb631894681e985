/**
 * The provider side of one exec or attach, shared by the SPDY and WebSocket transports: call
 * `runInContainer` / `attachToContainer` with the session's streams, turn what happened into
 * the exit status the client sees, and end the exchange cleanly (output first, then status).
 * @module
 */
import type { Logger } from "../../../base/log.ts";
import {
  type AttachIO,
  type ContainerRef,
  isInvalidInput,
  isNotFound,
  isNotSupported,
  type Provider,
} from "../../../provider/mod.ts";
import type { RemoteCommandResult } from "./remote_command.ts";
import type { TerminalSize } from "./resize.ts";

/** The streams of one exec/attach, whatever carries them. */
export interface CommandChannels {
  stdin?: ReadableStream<Uint8Array>;
  stdout?: WritableStream<Uint8Array>;
  stderr?: WritableStream<Uint8Array>;
  resize?: AsyncIterable<TerminalSize>;
  /** Ends output, reports `result`, closes the connection gracefully. */
  finish(result: RemoteCommandResult): Promise<void>;
  /** Closes the connection at once (when a graceful finish cannot complete). */
  closeNow(): void;
}

/** What {@link runCommand} needs. */
export interface RunCommandOptions {
  kind: "exec" | "attach";
  provider: Provider;
  container: ContainerRef;
  /** argv for exec. */
  command: string[];
  tty: boolean;
  /** Aborts the provider call: client gone, idle timeout, server shutdown. */
  signal: AbortSignal;
  /** How long `finish` may take before the connection is cut; default 15 s. */
  finishTimeoutMs?: number;
  log: Logger;
}

/** Runs the command on the provider and finishes the exchange; never rejects. */
export async function runCommand(
  channels: CommandChannels,
  options: RunCommandOptions,
): Promise<RemoteCommandResult> {
  const io: AttachIO = {
    ...(channels.stdin ? { stdin: channels.stdin } : {}),
    ...(channels.stdout ? { stdout: channels.stdout } : {}),
    ...(channels.stderr && !options.tty ? { stderr: channels.stderr } : {}),
    tty: options.tty,
    ...(options.tty && channels.resize ? { resize: channels.resize } : {}),
  };
  const result = await callProvider(io, options);
  // Unread input must not hold up the connection (its buffer would pause the reader).
  if (channels.stdin && !channels.stdin.locked) await channels.stdin.cancel().catch(() => {});
  const timer = setTimeout(() => {
    options.log.debug("{kind} did not finish in time; closing the connection", {
      kind: options.kind,
    });
    channels.closeNow();
  }, options.finishTimeoutMs ?? 15_000);
  try {
    await channels.finish(result);
  } catch (err) {
    options.log.debug("{kind} finish failed: {err}", { kind: options.kind, err });
    channels.closeNow();
  } finally {
    clearTimeout(timer);
  }
  return result;
}

async function callProvider(
  io: AttachIO,
  options: RunCommandOptions,
): Promise<RemoteCommandResult> {
  const { provider, container, signal } = options;
  // A provider that ignores the signal must not keep the session open: stop waiting for it.
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => {});
  try {
    if (options.kind === "exec") {
      const code = provider.runInContainer!(container, { command: options.command, io, signal });
      return { exitCode: exitCodeOf(await Promise.race([code, aborted])) };
    }
    await Promise.race([provider.attachToContainer!(container, { io, signal }), aborted]);
    return {};
  } catch (err) {
    if (signal.aborted) return { error: reasonText(signal.reason) };
    const message = describeProviderError(err, options.kind);
    options.log.debug("{kind} in {pod} failed: {err}", {
      kind: options.kind,
      pod: `${container.namespace}/${container.pod}`,
      err,
    });
    return { error: message };
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** An exit code as the wire carries it: an integer from 0 to 255 (as a shell reports). */
function exitCodeOf(code: unknown): number {
  if (typeof code !== "number" || !Number.isInteger(code)) return 255;
  return ((code % 256) + 256) % 256;
}

/** The message the client sees for a provider error. */
export function describeProviderError(err: unknown, kind: string): string {
  const message = err instanceof Error ? err.message : String(err);
  if (isNotFound(err)) return `not found: ${message}`;
  if (isNotSupported(err)) {
    // The kit's refuseStreaming already says so, in the kubelet API's words.
    return message.startsWith(`${kind} is not supported`)
      ? message
      : `${kind} is not supported here: ${message}`;
  }
  if (isInvalidInput(err)) return `invalid ${kind} request: ${message}`;
  return message;
}

function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message;
  return typeof reason === "string" ? reason : "the session was closed";
}
