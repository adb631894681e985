/**
 * `kubectl attach` to a container's main process, as containerd does it for the kubelet
 * (containerd internal/cri/io/container_io.go `Attach`): the session receives the instance's
 * stdout and stderr from now on (./output_fanout.ts) until the instance ends or the client
 * goes; with `stdin: true` in the container spec, the session's stdin is written into the
 * container's stdin FIFO through a `cat` child (Deno would block a thread on the FIFO). When the
 * session's stdin ends, a `stdinOnce` container's stdin is closed for good and output keeps
 * flowing until the container ends; otherwise the session ends there. A session's stdin for a
 * container without `stdin: true` is ignored, as containerd ignores it.
 *
 * A container with `tty: true` is refused: its main process runs without a terminal here
 * (giving it one would mean starting every such container under `script` and routing the
 * terminal through the FIFOs), so there is nothing to attach a terminal to.
 * @module
 */
import type { Container } from "kubernetes-types/core/v1.d.ts";
import { type AttachIO, InvalidInputError, NotSupportedError } from "../../../provider/mod.ts";
import type { Instance } from "../launch/instance.ts";
import type { OutputChunk } from "./output_fanout.ts";
import { hostCommand } from "../host/host_tools.ts";

/** What an attach session connects to. */
export interface AttachTarget {
  container: Container;
  instance: Instance;
  /** Called after the session closed the container's stdin for good (to save the record). */
  onStdinClosed?: () => void;
}

/** Runs one attach session until the instance ends, the client goes or its stdin ends. */
export async function attachSession(
  target: AttachTarget,
  io: AttachIO,
  signal?: AbortSignal,
): Promise<void> {
  const { container, instance } = target;
  if (container.tty) {
    throw new NotSupportedError(
      `container ${container.name} has tty: true, but the process provider runs a container's main process without a terminal, so it cannot attach to one; set tty: false and attach without -t, or use kubectl exec -it`,
    );
  }
  if (io.tty) {
    throw new InvalidInputError(
      `container ${container.name} was started without a terminal (tty: false); attach without -t`,
    );
  }
  const session = new AbortController();
  const stop = AbortSignal.any([session.signal, ...(signal ? [signal] : [])]);
  const output = instance.output.subscribe({ signal: stop });
  const copying = copyOutput(output, io, stop).finally(() => session.abort());
  const fifo = instance.stdinFifo;
  if (io.stdin && fifo) {
    const ended = await feedStdin(io.stdin, fifo, stop);
    if (container.stdinOnce && (ended === "eof" || signal?.aborted)) {
      instance.closeStdin();
      target.onStdinClosed?.();
    } else if (ended === "eof") session.abort();
  }
  await copying;
}

/** Copies subscribed output to the session's stdout/stderr until it ends or `stop` aborts. */
async function copyOutput(
  output: ReadableStream<OutputChunk>,
  io: AttachIO,
  stop: AbortSignal,
): Promise<void> {
  const reader = output.getReader();
  const writers = { stdout: io.stdout?.getWriter(), stderr: io.stderr?.getWriter() };
  const stopped = abortPromise(stop);
  try {
    while (true) {
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) break;
      const writer = writers[next.value.stream];
      if (!writer) continue;
      const written = await Promise.race([writer.write(next.value.data).then(() => true), stopped]);
      if (!written) break;
    }
  } catch {
    // The client's stream failed: the session is over.
  } finally {
    await reader.cancel().catch(() => {});
    writers.stdout?.releaseLock();
    writers.stderr?.releaseLock();
  }
}

/**
 * Writes the session's stdin into the container's stdin FIFO through `cat`; "eof" when the
 * client's stdin ended (and everything was handed on), "stopped" when `stop` aborted first.
 */
async function feedStdin(
  stdin: ReadableStream<Uint8Array>,
  fifo: string,
  stop: AbortSignal,
): Promise<"eof" | "stopped"> {
  const relay = hostCommand("sh", {
    args: ["-c", 'exec cat > "$1"', "vkubelet-attach-stdin", fifo],
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const reader = stdin.getReader();
  const writer = relay.stdin.getWriter();
  const stopped = abortPromise(stop).then(() => ({ done: true as const, value: undefined }));
  let ended: "eof" | "stopped" = "stopped";
  try {
    while (true) {
      const next = await Promise.race([reader.read(), stopped]);
      if (next.done) {
        if (!stop.aborted) ended = "eof";
        break;
      }
      if (!await Promise.race([writer.write(next.value).then(() => true), stopped])) break;
    }
  } catch {
    // The client's stdin failed, or the container no longer reads (cat ended).
  } finally {
    reader.releaseLock();
    // On EOF `cat` hands on what it holds and ends; a container that stops reading must not
    // keep the session, so the session's end still kills it.
    if (ended === "eof") await Promise.race([writer.close().catch(() => {}), stopped]);
    writer.releaseLock();
    const onStop = () => killQuietly(relay);
    if (ended !== "eof" || stop.aborted) onStop();
    else stop.addEventListener("abort", onStop, { once: true });
    await relay.status;
    stop.removeEventListener("abort", onStop);
  }
  return ended;
}

/** Resolves (with `false`) when `signal` aborts; never rejects. */
function abortPromise(signal: AbortSignal): Promise<false> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(false), { once: true })
  );
}

function killQuietly(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // already ended
  }
}
