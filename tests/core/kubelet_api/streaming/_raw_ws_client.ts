/**
 * A bare WebSocket client for the SPDY tunnel test: npm `ws` and Deno's WebSocket refuse the
 * sub-protocol `SPDY/3.1+portforward.k8s.io` (a `/` is not a token character), which Go's
 * gorilla/websocket, as used by kubectl, sends. Handshake by hand, then binary frames (masked,
 * as a client must) as a {@link ByteDuplex}; pings are answered, close ends the stream.
 * @module
 */
import type { ByteDuplex } from "../../../../spdy/byte_duplex.ts";
import { rawUpgrade } from "../../../../tools/harness/handler_server.ts";

/** Opens `path` offering `protocol`; rejects unless the server answers 101 with it. */
export async function rawWebSocket(port: number, path: string, protocol: string) {
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const answer = await rawUpgrade(port, [
    `GET ${path} HTTP/1.1`,
    "Host: 127.0.0.1",
    "Connection: Upgrade",
    "Upgrade: websocket",
    `Sec-WebSocket-Key: ${key}`,
    "Sec-WebSocket-Version: 13",
    `Sec-WebSocket-Protocol: ${protocol}`,
  ]);
  if (answer.status !== 101) throw new Error(`HTTP ${answer.status}: ${answer.body}`);
  const chosen = answer.headers.find(([n]) => n === "sec-websocket-protocol")?.[1];
  const socket = answer.socket;
  const send = (opcode: number, payload: Uint8Array) =>
    new Promise<void>((resolve, reject) => {
      const mask = crypto.getRandomValues(new Uint8Array(4));
      const n = payload.length;
      const head = n < 126
        ? Uint8Array.of(0x80 | opcode, 0x80 | n)
        : n < 65536
        ? Uint8Array.of(0x80 | opcode, 0x80 | 126, n >> 8, n & 0xff)
        : Uint8Array.of(
          0x80 | opcode,
          0x80 | 127,
          0,
          0,
          0,
          0,
          n >>> 24,
          (n >> 16) & 0xff,
          (n >> 8) & 0xff,
          n & 0xff,
        );
      const frame = new Uint8Array(head.length + 4 + n);
      frame.set(head);
      frame.set(mask, head.length);
      for (let i = 0; i < n; i++) frame[head.length + 4 + i] = payload[i] ^ mask[i & 3];
      if (socket.destroyed) return reject(new Error("closed"));
      socket.write(frame, (err?: Error | null) => err ? reject(err) : resolve());
    });
  let buffer = answer.rest;
  let closed = false;
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      const parse = () => {
        while (buffer.length >= 2) {
          const opcode = buffer[0] & 0x0f;
          let length = buffer[1] & 0x7f, at = 2;
          if (length === 126) {
            if (buffer.length < 4) return;
            length = (buffer[2] << 8) | buffer[3];
            at = 4;
          } else if (length === 127) {
            if (buffer.length < 10) return;
            length = Number(new DataView(buffer.buffer, buffer.byteOffset + 2, 8).getBigUint64(0));
            at = 10;
          }
          if (buffer.length < at + length) return;
          const payload = buffer.slice(at, at + length);
          buffer = buffer.subarray(at + length);
          if (opcode === 2 || opcode === 0) controller.enqueue(payload);
          else if (opcode === 9) void send(10, payload).catch(() => {});
          else if (opcode === 8 && !closed) {
            closed = true;
            controller.close();
            void send(8, payload.subarray(0, 2)).catch(() => {}).finally(() => socket.end());
          }
        }
      };
      socket.on("data", (chunk: Uint8Array) => {
        const merged = new Uint8Array(buffer.length + chunk.length);
        merged.set(buffer);
        merged.set(chunk, buffer.length);
        buffer = merged;
        if (!closed) parse();
      });
      socket.on("close", () => {
        if (!closed) {
          closed = true;
          controller.close();
        }
      });
      parse();
      socket.resume();
    },
    cancel() {
      closed = true;
    },
  });
  const duplex: ByteDuplex = {
    readable,
    write: (bytes) => send(2, bytes),
    close() {
      void send(8, Uint8Array.of(0x03, 0xe8)).catch(() => {});
      setTimeout(() => socket.destroy(), 200);
    },
  };
  return { protocol: chosen, duplex, socket };
}
