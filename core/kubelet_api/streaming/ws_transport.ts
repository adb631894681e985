/**
 * A server-side WebSocket (npm `ws`) as the streaming code needs it: ordered sends that
 * resolve once written (back-pressure), incoming messages with pause/resume, a graceful close
 * that waits for the peer's close frame, and the whole connection as a {@link ByteDuplex} for
 * the `SPDY/3.1+portforward.k8s.io` tunnel (client-go `tools/portforward/tunneling_connection.go`:
 * binary messages are a byte stream, message boundaries mean nothing, close 1000 is EOF).
 * @module
 */
// @ts-types="@types/ws"
import type { WebSocket } from "ws";
import type { ByteDuplex } from "../../../spdy/byte_duplex.ts";

/** Largest payload per outgoing message. */
export const WS_MAX_SEND = 32 * 1024;

/** Bytes queued on a WebSocket above which a send waits until its data is written. */
const SEND_HIGH_WATER = 256 * 1024;

/**
 * Sends `data`; resolves at once while little is queued, else once `ws` has written it to the
 * socket (back-pressure without a round trip per message).
 */
export function wsSend(ws: WebSocket, data: Uint8Array | string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (ws.readyState !== 1) return reject(new Error("The WebSocket is closed"));
    let settled = false;
    ws.send(data, { binary: typeof data !== "string" }, (err) => {
      if (settled) return;
      settled = true;
      err ? reject(err) : resolve();
    });
    if (!settled && ws.bufferedAmount < SEND_HIGH_WATER) {
      settled = true;
      resolve();
    }
  });
}

/** Whether the close frame has been exchanged or the socket is gone. */
export function wsClosed(ws: WebSocket): Promise<void> {
  if (ws.readyState === 3) return Promise.resolve();
  return new Promise((resolve) => ws.once("close", () => resolve()));
}

/**
 * Sends a close frame (1000 unless told otherwise) and waits for the peer's, or `lingerMs`
 * (default 10 s), then drops the socket.
 */
export async function wsCloseGracefully(
  ws: WebSocket,
  options: { code?: number; reason?: string; lingerMs?: number } = {},
): Promise<void> {
  if (ws.readyState === 3) return;
  if (ws.readyState === 1) ws.close(options.code ?? 1000, options.reason ?? "");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, options.lingerMs ?? 10_000);
  });
  try {
    await Promise.race([wsClosed(ws), late]);
  } finally {
    clearTimeout(timer);
  }
  // The race above may have let the close frame through meanwhile; terminate is then a no-op.
  ws.terminate();
}

/** Options for {@link duplexFromWebSocket}. */
export interface WsDuplexOptions {
  /** Bytes buffered before the socket is paused; default 256 KiB. */
  highWaterMark?: number;
  /** Called for every message and every send (idle tracking). */
  touch?: () => void;
}

/** The binary messages of `ws` as a byte stream; a text message fails the stream. */
export function duplexFromWebSocket(ws: WebSocket, options: WsDuplexOptions = {}): ByteDuplex {
  const touch = options.touch ?? (() => {});
  // False once closed, errored or cancelled: the controller takes no more calls.
  let open = true;
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      ws.on("message", (data: Uint8Array, isBinary: boolean) => {
        touch();
        if (!open) return;
        if (!isBinary) {
          open = false;
          controller.error(new Error("A text message arrived on a SPDY tunnel"));
          ws.close(1003, "binary messages only");
          return;
        }
        controller.enqueue(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
        if ((controller.desiredSize ?? 1) <= 0) ws.pause();
      });
      ws.on("ping", touch);
      ws.on("close", () => {
        if (!open) return;
        open = false;
        controller.close();
      });
    },
    pull() {
      if (ws.isPaused) ws.resume();
    },
    cancel() {
      open = false;
      ws.pause();
    },
  }, { highWaterMark: options.highWaterMark ?? 256 * 1024, size: (c) => c.byteLength });
  return {
    readable,
    async write(bytes) {
      touch();
      for (let at = 0; at < bytes.length; at += WS_MAX_SEND) {
        await wsSend(ws, bytes.subarray(at, Math.min(at + WS_MAX_SEND, bytes.length)));
      }
    },
    close() {
      void wsCloseGracefully(ws, { lingerMs: 2000 });
    },
  };
}
