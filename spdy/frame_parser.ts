/**
 * Incremental SPDY/3 frame parser: chunks in, in any split, frames out. Frame layouts and the
 * checks follow moby/spdystream `spdy/read.go`, which Kubernetes uses on both ends.
 * @module
 */
import { SpdyProtocolError } from "./errors.ts";
import {
  ControlType,
  FLAG_CLEAR_SETTINGS,
  FLAG_FIN,
  FLAG_UNIDIRECTIONAL,
  ID_MASK,
  MAX_FRAME_PAYLOAD,
  SPDY_VERSION,
  type SpdyFrame,
  type SpdySetting,
} from "./frames.ts";

/** Limits for {@link SpdyFrameParser}. */
export interface SpdyFrameParserOptions {
  /** Largest DATA payload accepted; default 16 MiB - 1 (the most a frame can carry). */
  maxDataPayload?: number;
  /** Largest control frame payload accepted; default 1 MiB (Kubernetes headers are tiny). */
  maxControlPayload?: number;
}

/**
 * Incremental SPDY/3 frame parser. Feed it chunks as they arrive, in any split; it returns the
 * frames completed so far. Malformed input raises {@link SpdyProtocolError} and poisons the parser
 * (every later call raises the same error): the connection is beyond repair. It holds at most
 * one frame's bytes, and frames longer than the limits are rejected from their 8-byte header,
 * before any payload is buffered. Returned payloads may be views into the chunks it was given.
 */
export class SpdyFrameParser {
  readonly #maxData: number;
  readonly #maxControl: number;
  #chunks: Uint8Array[] = [];
  #offset = 0; // bytes of #chunks[0] already consumed
  #buffered = 0;
  #failure?: SpdyProtocolError;

  constructor(options: SpdyFrameParserOptions = {}) {
    this.#maxData = Math.min(options.maxDataPayload ?? MAX_FRAME_PAYLOAD, MAX_FRAME_PAYLOAD);
    this.#maxControl = Math.min(options.maxControlPayload ?? 1 << 20, MAX_FRAME_PAYLOAD);
  }

  /** Bytes received but not yet part of a complete frame. */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  /** Adds a chunk and returns every frame it completed. */
  push(chunk: Uint8Array): SpdyFrame[] {
    if (this.#failure) throw this.#failure;
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
    }
    const frames: SpdyFrame[] = [];
    try {
      for (;;) {
        const frame = this.#next();
        if (frame === undefined) break;
        if (frame !== null) frames.push(frame);
      }
    } catch (err) {
      this.#failure = err instanceof SpdyProtocolError
        ? err
        : new SpdyProtocolError("invalid_frame", "The SPDY frame could not be parsed", {
          cause: err,
        });
      this.#chunks = [];
      this.#buffered = 0;
      throw this.#failure;
    }
    return frames;
  }

  /** Call at end of input: raises if the input stopped in the middle of a frame. */
  finish(): void {
    if (this.#failure) throw this.#failure;
    if (this.#buffered > 0) {
      this.#failure = new SpdyProtocolError(
        "truncated",
        `The SPDY connection ended inside a frame (${this.#buffered} bytes left over)`,
      );
      throw this.#failure;
    }
  }

  /** A frame, null for a skipped (unknown) frame, undefined when more bytes are needed. */
  #next(): SpdyFrame | null | undefined {
    if (this.#buffered < 8) return undefined;
    const head = new DataView(this.#peek(8).buffer);
    const word = head.getUint32(0);
    const flags = head.getUint8(4);
    const length = head.getUint32(4) & 0xffffff;
    const control = (word & 0x80000000) !== 0;
    if (control) {
      const version = (word >>> 16) & 0x7fff;
      if (version !== SPDY_VERSION) {
        throw new SpdyProtocolError(
          "unsupported_version",
          `The peer sent a SPDY/${version} control frame; only SPDY/3 is spoken here`,
        );
      }
      if (length > this.#maxControl) {
        throw new SpdyProtocolError(
          "frame_too_large",
          `A SPDY control frame of ${length} bytes exceeds the ${this.#maxControl}-byte limit`,
        );
      }
    } else if (length > this.#maxData) {
      throw new SpdyProtocolError(
        "frame_too_large",
        `A SPDY DATA frame of ${length} bytes exceeds the ${this.#maxData}-byte limit`,
        { streamId: word & ID_MASK },
      );
    }
    if (this.#buffered < 8 + length) return undefined;
    this.#take(8);
    const payload = this.#take(length);
    if (!control) {
      return {
        type: "data",
        streamId: word & ID_MASK,
        fin: (flags & FLAG_FIN) !== 0,
        data: payload,
      };
    }
    return decodeControl(word & 0xffff, flags, payload);
  }

  #peek(n: number): Uint8Array {
    const first = this.#chunks[0];
    if (first.length - this.#offset >= n) {
      return first.slice(this.#offset, this.#offset + n);
    }
    const out = new Uint8Array(n);
    let filled = 0;
    for (let i = 0, off = this.#offset; filled < n; i++, off = 0) {
      const part = this.#chunks[i].subarray(off, off + n - filled);
      out.set(part, filled);
      filled += part.length;
    }
    return out;
  }

  #take(n: number): Uint8Array {
    this.#buffered -= n;
    const first = this.#chunks[0];
    if (first && first.length - this.#offset >= n) {
      const out = first.subarray(this.#offset, this.#offset + n);
      this.#advance(n);
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[0];
      const part = chunk.subarray(this.#offset, this.#offset + n - filled);
      out.set(part, filled);
      filled += part.length;
      this.#advance(part.length);
    }
    return out;
  }

  #advance(n: number): void {
    this.#offset += n;
    if (this.#offset === this.#chunks[0].length) {
      this.#chunks.shift();
      this.#offset = 0;
    }
  }
}

function invalid(message: string, streamId?: number): SpdyProtocolError {
  return new SpdyProtocolError("invalid_frame", message, { streamId });
}

function requireLength(name: string, payload: Uint8Array, exact: number | [min: number]) {
  const ok = typeof exact === "number" ? payload.length === exact : payload.length >= exact[0];
  if (!ok) {
    const want = typeof exact === "number" ? `${exact}` : `at least ${exact[0]}`;
    throw invalid(`A SPDY ${name} frame must carry ${want} bytes, not ${payload.length}`);
  }
}

function requireStreamId(name: string, streamId: number): number {
  if (streamId === 0) throw invalid(`A SPDY ${name} frame names stream 0, which is not a stream`);
  return streamId;
}

function decodeControl(type: number, flags: number, payload: Uint8Array): SpdyFrame | null {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const fin = (flags & FLAG_FIN) !== 0;
  switch (type) {
    case ControlType.synStream: {
      requireLength("SYN_STREAM", payload, [10]);
      return {
        type: "syn_stream",
        streamId: requireStreamId("SYN_STREAM", view.getUint32(0) & ID_MASK),
        associatedToStreamId: view.getUint32(4) & ID_MASK,
        priority: payload[8] >>> 5,
        slot: payload[9],
        fin,
        unidirectional: (flags & FLAG_UNIDIRECTIONAL) !== 0,
        headerBlock: payload.subarray(10),
      };
    }
    case ControlType.synReply:
    case ControlType.headers: {
      const name = type === ControlType.synReply ? "SYN_REPLY" : "HEADERS";
      requireLength(name, payload, [4]);
      const streamId = requireStreamId(name, view.getUint32(0) & ID_MASK);
      const kind = type === ControlType.synReply ? "syn_reply" : "headers";
      return { type: kind, streamId, fin, headerBlock: payload.subarray(4) };
    }
    case ControlType.rstStream: {
      requireLength("RST_STREAM", payload, 8);
      const streamId = requireStreamId("RST_STREAM", view.getUint32(0) & ID_MASK);
      const status = view.getUint32(4);
      // moby/spdystream spdy/read.go rejects status 0 the same way.
      if (status === 0) throw invalid("A SPDY RST_STREAM frame carries status 0", streamId);
      return { type: "rst_stream", streamId, status };
    }
    case ControlType.settings: {
      requireLength("SETTINGS", payload, [4]);
      const count = view.getUint32(0);
      if (count > (payload.length - 4) / 8) {
        throw invalid(`A SPDY SETTINGS frame claims ${count} entries in ${payload.length} bytes`);
      }
      const settings: SpdySetting[] = [];
      for (let i = 0; i < count; i++) {
        const idWord = view.getUint32(4 + 8 * i);
        settings.push({
          flags: idWord >>> 24,
          id: idWord & 0xffffff,
          value: view.getUint32(8 + 8 * i),
        });
      }
      return { type: "settings", clearSettings: (flags & FLAG_CLEAR_SETTINGS) !== 0, settings };
    }
    case ControlType.ping:
      requireLength("PING", payload, 4);
      return { type: "ping", id: view.getUint32(0) };
    case ControlType.goAway:
      requireLength("GOAWAY", payload, 8);
      return {
        type: "goaway",
        lastGoodStreamId: view.getUint32(0) & ID_MASK,
        status: view.getUint32(4),
      };
    case ControlType.windowUpdate:
      requireLength("WINDOW_UPDATE", payload, 8);
      return {
        type: "window_update",
        streamId: view.getUint32(0) & ID_MASK,
        delta: view.getUint32(4) & ID_MASK,
      };
    default:
      // SPDY/3 §2.2.1: a control frame of an unknown type must be ignored (NOOP, CREDENTIAL, …).
      return null;
  }
}
