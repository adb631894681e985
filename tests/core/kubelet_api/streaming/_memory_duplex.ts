/**
 * An in-memory connected pair of byte duplexes, like a socketpair: bytes written on one side are
 * read on the other, with back-pressure, and `close()` ends both directions (as a socket close).
 * @module
 */
import type { ByteDuplex } from "../../../../spdy/session.ts";

interface Pipe {
  readable: ReadableStream<Uint8Array>;
  write(bytes: Uint8Array): Promise<void>;
  end(): void;
}

function pipe(highWaterMark: number): Pipe {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let room: PromiseWithResolvers<void> | undefined;
  let ended = false;
  const readable = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
    },
    pull: () => {
      room?.resolve();
      room = undefined;
    },
    cancel: () => {
      ended = true;
      room?.resolve();
    },
  }, { highWaterMark, size: (chunk) => chunk.byteLength });
  return {
    readable,
    async write(bytes) {
      if (ended) throw new Error("The memory pipe is closed");
      controller.enqueue(bytes.slice());
      if ((controller.desiredSize ?? 1) <= 0) {
        room ??= Promise.withResolvers<void>();
        await room.promise;
      }
    },
    end() {
      if (ended) return;
      ended = true;
      controller.close();
      room?.resolve();
    },
  };
}

/** Records everything a side wrote, for byte-exact assertions. */
export interface RecordingDuplex extends ByteDuplex {
  written: Uint8Array[];
}

/** Two connected duplexes. `highWaterMark` bounds bytes in flight per direction. */
export function memoryDuplexPair(highWaterMark = 256 * 1024): [RecordingDuplex, RecordingDuplex] {
  const aToB = pipe(highWaterMark);
  const bToA = pipe(highWaterMark);
  const side = (out: Pipe, inbound: Pipe): RecordingDuplex => {
    const written: Uint8Array[] = [];
    return {
      readable: inbound.readable,
      written,
      write(bytes) {
        written.push(bytes.slice());
        return out.write(bytes);
      },
      close() {
        out.end();
        inbound.end();
      },
    };
  };
  return [side(aToB, bToA), side(bToA, aToB)];
}

/** A duplex whose peer is a test script: push bytes in, read what was written. */
export function scriptedDuplex(): RecordingDuplex & { feed(bytes: Uint8Array): void; end(): void } {
  const inbound = pipe(1 << 30);
  const written: Uint8Array[] = [];
  let closed = false;
  return {
    readable: inbound.readable,
    written,
    write(bytes) {
      if (closed) return Promise.reject(new Error("closed"));
      written.push(bytes.slice());
      return Promise.resolve();
    },
    close() {
      closed = true;
      inbound.end();
    },
    feed(bytes) {
      if (!closed) inbound.write(bytes);
    },
    end() {
      inbound.end();
    },
  };
}

/** Concatenates byte arrays. */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Hex of bytes, for readable assertions. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Bytes from hex (spaces allowed). */
export function fromHex(text: string): Uint8Array {
  const clean = text.replace(/\s+/g, "");
  return Uint8Array.from(clean.match(/../g) ?? [], (h) => parseInt(h, 16));
}

/** Reads a stream to its end. */
export async function readAll(readable: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of readable) parts.push(chunk);
  return concatBytes(parts);
}

/** Hex sha256 of bytes. */
export async function sha256(bytes: Uint8Array): Promise<string> {
  return hex(
    new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)),
  );
}

/** Deterministic pseudo-random bytes (xorshift32). */
export function pseudoRandomBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}
