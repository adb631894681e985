/**
 * SPDY/3 header blocks: the name/value layout and its zlib compression with the SPDY/3
 * dictionary. Each direction of a connection keeps ONE compression context for all its
 * SYN_STREAM, SYN_REPLY and HEADERS frames, and every block ends with a Z_SYNC_FLUSH
 * (moby/spdystream `spdy/types.go : NewFramer`, `spdy/write.go : writeHeaderValueBlock`,
 * `spdy/read.go : uncorkHeaderDecompressor`). pako is used because Deno's node:zlib ignores
 * `dictionary` when deflating.
 * @module
 */
// @ts-types="@types/pako"
import pako from "pako";
import { SPDY3_DICTIONARY } from "./_dictionary.ts";
import { SpdyProtocolError } from "./errors.ts";

/** Header names (lower case) to their values; SPDY joins several values of one name with NUL. */
export type SpdyHeaders = Record<string, string[]>;

/** Limits for {@link SpdyHeaderDecompressor}. */
export interface SpdyHeaderLimits {
  /** Largest decompressed header block; default 64 KiB. Guards against zip bombs. */
  maxBlockBytes?: number;
  /** Most name/value pairs in one block; default 256. */
  maxHeaders?: number;
}

const Z_SYNC_FLUSH = 2;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The first value of `name` (matched case-insensitively), if any. */
export function headerValue(headers: SpdyHeaders, name: string): string | undefined {
  return (headers[name.toLowerCase()] ?? [])[0];
}

/** Builds {@link SpdyHeaders} from single values or lists; names are lower-cased. */
export function spdyHeaders(values: Record<string, string | string[]>): SpdyHeaders {
  const out: SpdyHeaders = {};
  for (const [name, value] of Object.entries(values)) {
    out[name.toLowerCase()] = Array.isArray(value) ? [...value] : [value];
  }
  return out;
}

/** The uncompressed SPDY/3 name/value block: count, then (length, name, length, value) pairs. */
export function encodeHeaderBlock(headers: SpdyHeaders): Uint8Array {
  const pairs = Object.entries(headers).map(([name, values]) => {
    const lower = name.toLowerCase();
    if (lower.length === 0) throw new TypeError("A SPDY header name must not be empty");
    return [encoder.encode(lower), encoder.encode(values.join("\0"))];
  });
  const size = pairs.reduce((n, [name, value]) => n + 8 + name.length + value.length, 4);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, pairs.length);
  let at = 4;
  for (const [name, value] of pairs) {
    view.setUint32(at, name.length);
    out.set(name, at + 4);
    at += 4 + name.length;
    view.setUint32(at, value.length);
    out.set(value, at + 4);
    at += 4 + value.length;
  }
  return out;
}

function badBlock(message: string): SpdyProtocolError {
  return new SpdyProtocolError("invalid_header_block", message);
}

/** Parses an uncompressed name/value block; raises {@link SpdyProtocolError} on any defect. */
export function decodeHeaderBlock(block: Uint8Array, maxHeaders = 256): SpdyHeaders {
  const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
  let at = 0;
  const readBytes = (what: string): Uint8Array => {
    if (at + 4 > block.length) throw badBlock(`A SPDY header block ends inside a ${what} length`);
    const length = view.getUint32(at);
    if (length > block.length - at - 4) {
      throw badBlock(`A SPDY header ${what} claims ${length} bytes past the end of its block`);
    }
    const bytes = block.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    return bytes;
  };
  if (block.length < 4) throw badBlock("A SPDY header block is shorter than its count field");
  const count = view.getUint32(0);
  at = 4;
  if (count > maxHeaders) {
    throw badBlock(`A SPDY header block has ${count} headers; at most ${maxHeaders} are allowed`);
  }
  const headers: SpdyHeaders = {};
  for (let i = 0; i < count; i++) {
    const name = text(readBytes("name")).toLowerCase();
    if (name.length === 0) throw badBlock("A SPDY header block has an empty header name");
    const values = text(readBytes("value")).split("\0");
    // moby/spdystream flags duplicates and upper case but still reads them; so do we, merged.
    headers[name] = Object.hasOwn(headers, name) ? [...headers[name], ...values] : values;
  }
  if (at !== block.length) {
    throw badBlock(`A SPDY header block has ${block.length - at} bytes after its last header`);
  }
  return headers;
}

function text(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw badBlock("A SPDY header name or value is not valid UTF-8");
  }
}

/** Compresses header blocks for one direction of one connection. */
export class SpdyHeaderCompressor {
  #deflate?: pako.Deflate;
  #out: Uint8Array[] = [];

  /** Encodes and compresses `headers`, ending with a sync flush so the block is self-contained. */
  compress(headers: SpdyHeaders): Uint8Array {
    const block = encodeHeaderBlock(headers);
    if (!this.#deflate) {
      // Level 9 as in Go's writer (BestCompression); the dictionary sets FDICT in the header.
      this.#deflate = new pako.Deflate({ level: 9, dictionary: SPDY3_DICTIONARY, chunkSize: 4096 });
      this.#deflate.onData = (chunk) => this.#out.push(chunk as Uint8Array);
    }
    this.#out = [];
    if (!this.#deflate.push(block, Z_SYNC_FLUSH)) {
      throw new RangeError(`SPDY header compression failed: ${this.#deflate.msg}`);
    }
    return concat(this.#out);
  }
}

interface InflateInternals {
  strm: { output: Uint8Array; next_out: number; avail_out: number; avail_in: number };
  ended: boolean;
  err: number;
  msg: string;
}

class BlockTooLarge extends Error {}

/** Decompresses header blocks from one direction of one connection. */
export class SpdyHeaderDecompressor {
  readonly #maxBlockBytes: number;
  readonly #maxHeaders: number;
  #inflate?: pako.Inflate;
  #failure?: SpdyProtocolError;

  constructor(limits: SpdyHeaderLimits = {}) {
    this.#maxBlockBytes = limits.maxBlockBytes ?? 64 * 1024;
    this.#maxHeaders = limits.maxHeaders ?? 256;
  }

  /**
   * Inflates one frame's header block and parses it. Every compressed byte must be consumed and
   * the output must hold exactly one block (spdystream's `WrongCompressedPayloadSize` check).
   * Raises {@link SpdyProtocolError}; after one failure the context is unusable, as in zlib.
   */
  decompress(compressed: Uint8Array): SpdyHeaders {
    if (this.#failure) throw this.#failure;
    // Lenient: an empty block is read as no headers rather than as a truncated stream.
    if (compressed.length === 0) return {};
    try {
      return decodeHeaderBlock(this.#inflateBlock(compressed), this.#maxHeaders);
    } catch (err) {
      this.#failure = err instanceof SpdyProtocolError ? err : new SpdyProtocolError(
        "compression_error",
        "A SPDY header block could not be decompressed",
        { cause: err },
      );
      throw this.#failure;
    }
  }

  #inflateBlock(compressed: Uint8Array): Uint8Array {
    if (!this.#inflate) {
      this.#inflate = new pako.Inflate({ dictionary: SPDY3_DICTIONARY, chunkSize: 4096 });
    }
    const inflate = this.#inflate;
    const internals = inflate as unknown as InflateInternals;
    const parts: Uint8Array[] = [];
    let total = 0;
    const keep = (bytes: Uint8Array) => {
      total += bytes.length;
      if (total > this.#maxBlockBytes) throw new BlockTooLarge();
      if (bytes.length > 0) parts.push(bytes.slice());
    };
    // pako hands out its output buffer only when it is full; the rest of a sync-flushed block
    // is read from strm.output below, and avail_out = 0 makes the next push start a fresh buffer.
    inflate.onData = (chunk) => keep(chunk as Uint8Array);
    try {
      inflate.push(compressed, Z_SYNC_FLUSH);
    } catch (err) {
      if (err instanceof BlockTooLarge) throw this.#tooLarge();
      throw err;
    }
    if (internals.err !== 0 || internals.ended) {
      throw new SpdyProtocolError(
        "compression_error",
        `A SPDY header block is not a valid zlib stream with the SPDY/3 dictionary (${
          internals.msg || "the stream ended"
        })`,
      );
    }
    const { strm } = internals;
    if (strm.avail_in !== 0) {
      throw new SpdyProtocolError(
        "compression_error",
        "A SPDY header block left compressed bytes unread",
      );
    }
    try {
      if (strm.output) keep(strm.output.subarray(0, strm.next_out));
    } catch {
      throw this.#tooLarge();
    }
    strm.avail_out = 0;
    return concat(parts);
  }

  #tooLarge(): SpdyProtocolError {
    return new SpdyProtocolError(
      "header_block_too_large",
      `A SPDY header block inflates to more than ${this.#maxBlockBytes} bytes`,
    );
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
