/**
 * `kubectl port-forward` to a process pod: the pod shares the host's network, so each stream
 * is connected to 127.0.0.1:<port> and bytes are copied both ways until both sides are done.
 * @module
 */
import { InvalidInputError, type PortForwardStream } from "../../provider/mod.ts";

/** Connects `stream` to 127.0.0.1:`port`; resolves when both directions are done. */
export async function forwardPort(
  port: number,
  stream: PortForwardStream,
  signal?: AbortSignal,
): Promise<void> {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new InvalidInputError(`port ${port} is not a TCP port number (1-65535)`);
  }
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const close = () => {
    try {
      conn.close();
    } catch {
      // closed already
    }
  };
  signal?.addEventListener("abort", close, { once: true });
  try {
    // Half-close towards the target when the client is done sending, and keep reading its answer.
    const toTarget = stream.readable.pipeTo(conn.writable, { preventClose: true })
      .then(() => conn.closeWrite()).catch(() => {});
    const fromTarget = conn.readable.pipeTo(stream.writable).catch(() => {});
    await Promise.all([toTarget, fromTarget]);
  } finally {
    signal?.removeEventListener("abort", close);
    close();
  }
}
