/**
 * The tunnel's frames: yamux's (hashicorp/yamux spec.md), a 12-byte big-endian header
 * `version(8) type(8) flags(16) stream(32) length(32)`, then `length` bytes of payload for a
 * data frame. Window updates carry the credit in `length`, pings an opaque value, go-away a code.
 * @module
 */

/** The only version yamux defines. */
export const VERSION = 0;
/** Header size in bytes. */
export const HEADER_SIZE = 12;

/** Frame types. */
export const FrameType = { data: 0, windowUpdate: 1, ping: 2, goAway: 3 } as const;
/** Frame flags. */
export const Flag = { syn: 1, ack: 2, fin: 4, rst: 8 } as const;
/** Go-away codes. */
export const GoAwayCode = { normal: 0, protocolError: 1, internalError: 2 } as const;

/** A decoded frame; `payload` only for data frames. */
export interface Frame {
  type: number;
  flags: number;
  stream: number;
  length: number;
  payload?: Uint8Array;
}

/** A frame that breaks the protocol; the session answers with go-away(protocol error). */
export class TunnelProtocolError extends Error {
  override name = "TunnelProtocolError";
}

/** Whether `err` is a {@link TunnelProtocolError}. */
export function isTunnelProtocolError(err: unknown): err is TunnelProtocolError {
  return err instanceof TunnelProtocolError;
}

/** Encodes a frame's header, followed by `payload` when given (one buffer, one write). */
export function encodeFrame(
  type: number,
  flags: number,
  stream: number,
  lengthOrPayload: number | Uint8Array,
): Uint8Array {
  const payload = typeof lengthOrPayload === "number" ? undefined : lengthOrPayload;
  const out = new Uint8Array(HEADER_SIZE + (payload?.length ?? 0));
  const view = new DataView(out.buffer);
  view.setUint8(0, VERSION);
  view.setUint8(1, type);
  view.setUint16(2, flags);
  view.setUint32(4, stream);
  view.setUint32(8, payload ? payload.length : lengthOrPayload as number);
  if (payload) out.set(payload, HEADER_SIZE);
  return out;
}

/**
 * Cuts a byte stream into frames. `maxPayload` bounds a data frame (the receiver's largest
 * window), so a peer cannot make us buffer more than that for one frame.
 */
export class FrameParser {
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  #header?: Frame;

  constructor(private readonly maxPayload: number) {}

  /** Adds bytes and returns every frame now complete; throws on a malformed header. */
  push(bytes: Uint8Array): Frame[] {
    if (bytes.length) {
      this.#chunks.push(bytes);
      this.#buffered += bytes.length;
    }
    const frames: Frame[] = [];
    for (;;) {
      if (!this.#header) {
        if (this.#buffered < HEADER_SIZE) break;
        this.#header = this.#decodeHeader(this.#take(HEADER_SIZE));
      }
      const header = this.#header;
      if (header.type !== FrameType.data) {
        frames.push(header);
        this.#header = undefined;
        continue;
      }
      if (this.#buffered < header.length) break;
      frames.push({ ...header, payload: this.#take(header.length) });
      this.#header = undefined;
    }
    return frames;
  }

  #decodeHeader(bytes: Uint8Array): Frame {
    const view = new DataView(bytes.buffer, bytes.byteOffset, HEADER_SIZE);
    const version = view.getUint8(0);
    const type = view.getUint8(1);
    const frame = {
      type,
      flags: view.getUint16(2),
      stream: view.getUint32(4),
      length: view.getUint32(8),
    };
    if (version !== VERSION) {
      throw new TunnelProtocolError(
        `Tunnel frame has version ${version}; this end speaks yamux version ${VERSION}`,
      );
    }
    if (type > FrameType.goAway) {
      throw new TunnelProtocolError(`Tunnel frame has unknown type ${type}`);
    }
    if (type === FrameType.data && frame.length > this.maxPayload) {
      throw new TunnelProtocolError(
        `Tunnel data frame of ${frame.length} bytes is larger than the window (${this.maxPayload})`,
      );
    }
    return frame;
  }

  #take(n: number): Uint8Array {
    const first = this.#chunks[0];
    if (first && first.length >= n) {
      const out = first.subarray(0, n);
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      this.#buffered -= n;
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[0];
      const part = Math.min(chunk.length, n - filled);
      out.set(chunk.subarray(0, part), filled);
      filled += part;
      if (part === chunk.length) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(part);
    }
    this.#buffered -= n;
    return out;
  }
}
