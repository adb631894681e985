/** In-memory byte duplexes for the multiplexer's unit tests. @module */
import type { ByteDuplex } from "../../spdy/byte_duplex.ts";

/** One direction: writes resolve once the other end has read them (strict back-pressure). */
function pipe(): {
  readable: ReadableStream<Uint8Array>;
  write(b: Uint8Array): Promise<void>;
  close(): void;
} {
  const t = new TransformStream<Uint8Array, Uint8Array>();
  const writer = t.writable.getWriter();
  return {
    readable: t.readable,
    write: (b) => writer.write(b.slice()),
    close: () => void writer.close().catch(() => {}),
  };
}

/** Two connected ends; closing either ends both directions, as a socket's close does. */
export function duplexPair(): [ByteDuplex, ByteDuplex] {
  const ab = pipe();
  const ba = pipe();
  const close = () => {
    ab.close();
    ba.close();
  };
  return [
    { readable: ba.readable, write: ab.write, close },
    { readable: ab.readable, write: ba.write, close },
  ];
}
