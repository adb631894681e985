/**
 * Adapts a node:net / node:tls socket (what `node:https`'s `upgrade` event hands over) to the
 * {@link ByteDuplex} a SPDY session runs on, with back-pressure both ways.
 * @module
 */
import type { Socket } from "node:net";
import type { ByteDuplex } from "./session.ts";

/** Options for {@link duplexFromNodeSocket}. */
export interface NodeSocketDuplexOptions {
  /** Bytes the HTTP parser read past the request head (the upgrade event's `head`). */
  head?: Uint8Array;
  /** Bytes buffered from the socket before it is paused; default 256 KiB. */
  highWaterMark?: number;
}

/** Wraps `socket`; `close()` ends it after pending writes flush, then destroys it. */
export function duplexFromNodeSocket(
  socket: Socket,
  options: NodeSocketDuplexOptions = {},
): ByteDuplex {
  let failure: Error | undefined;
  // False once the stream is closed, errored or cancelled: the controller takes no more calls.
  let open = true;
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      if (options.head && options.head.length > 0) controller.enqueue(options.head.slice());
      const finish = () => {
        if (!open) return;
        open = false;
        failure ? controller.error(failure) : controller.close();
      };
      socket.on("data", (chunk: Uint8Array) => {
        if (!open) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) socket.pause();
      });
      socket.on("end", finish);
      socket.on("close", finish);
      socket.on("error", (err: Error) => {
        failure ??= err;
        finish();
      });
    },
    pull() {
      if (socket.isPaused()) socket.resume();
    },
    cancel() {
      open = false;
      socket.pause();
    },
  }, { highWaterMark: options.highWaterMark ?? 256 * 1024, size: (c) => c.byteLength });

  return {
    readable,
    write(bytes) {
      if (failure) return Promise.reject(failure);
      if (socket.destroyed || socket.writableEnded) {
        return Promise.reject(new Error("The socket is closed"));
      }
      return new Promise((resolve, reject) => {
        const flushed = socket.write(bytes);
        if (flushed) return resolve();
        const cleanup = () => {
          socket.off("drain", onDrain);
          socket.off("close", onClose);
        };
        const onDrain = () => {
          cleanup();
          resolve();
        };
        const onClose = () => {
          cleanup();
          reject(failure ?? new Error("The socket closed before its data was sent"));
        };
        socket.on("drain", onDrain);
        socket.on("close", onClose);
      });
    },
    close() {
      if (socket.destroyed) return;
      if (socket.writableEnded) {
        socket.destroy();
        return;
      }
      // Flush and send FIN, but never wait forever on a peer that stops reading.
      const timer = setTimeout(() => socket.destroy(), 2000);
      socket.once("close", () => clearTimeout(timer));
      socket.end(() => socket.destroy());
    },
  };
}
