/**
 * Terminal resize messages: a sequence of JSON objects `{"Width":…,"Height":…}` (capitalised
 * keys, uint16 values) written by Go's json.Encoder on the resize stream or WebSocket channel 4
 * (client-go `tools/remotecommand/resize.go : TerminalSize`; read by cri-streaming
 * `remotecommand/httpstream.go : handleResizeEvents` with a streaming JSON decoder).
 * @module
 */

/** A terminal size in character cells. */
export interface TerminalSize {
  width: number;
  height: number;
}

const MAX_MESSAGE = 4096;

/** Parses one resize message; undefined when it is not a valid one. */
export function parseResizeMessage(text: string): TerminalSize | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { Width: width, Height: height } = value as Record<string, unknown>;
  const valid = (n: unknown): n is number =>
    typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 0xffff;
  // Go decodes missing fields as 0; so do we.
  const w = width === undefined ? 0 : width, h = height === undefined ? 0 : height;
  return valid(w) && valid(h) ? { width: w, height: h } : undefined;
}

/** Resize bytes in one message beyond which the stream is given up (a size is ~30 bytes). */
const MAX_CHUNK = 64 * 1024;

/**
 * Splits the resize byte stream, fed in pieces, into top-level JSON objects. `push` returns the
 * valid sizes completed by a piece, or undefined once the stream is malformed or a message is
 * oversized: then stop reading resizes, as the kubelet does after a decode error.
 */
export class ResizeDecoder {
  #decoder = new TextDecoder();
  #buffer = "";
  #depth = 0;
  #inString = false;
  #escaped = false;
  #start = -1;
  #scanned = 0;
  #failed = false;

  /** True once the stream was given up. */
  get failed(): boolean {
    return this.#failed;
  }

  /** Feeds bytes; see the class doc. */
  push(bytes: Uint8Array): TerminalSize[] | undefined {
    if (this.#failed || bytes.length > MAX_CHUNK) return this.#fail();
    this.#buffer += this.#decoder.decode(bytes, { stream: true });
    const sizes: TerminalSize[] = [];
    for (; this.#scanned < this.#buffer.length; this.#scanned++) {
      const c = this.#buffer[this.#scanned];
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === "\\") this.#escaped = true;
        else if (c === '"') this.#inString = false;
      } else if (c === '"' && this.#depth > 0) {
        this.#inString = true;
      } else if (c === "{") {
        if (this.#depth++ === 0) this.#start = this.#scanned;
      } else if (c === "}" && this.#depth > 0) {
        if (--this.#depth > 0) continue;
        const size = parseResizeMessage(this.#buffer.slice(this.#start, this.#scanned + 1));
        if (!size) return this.#fail(sizes);
        sizes.push(size);
        this.#buffer = this.#buffer.slice(this.#scanned + 1);
        this.#scanned = -1;
      } else if (this.#depth === 0 && !/\s/.test(c)) {
        return this.#fail(sizes);
      }
    }
    if (this.#buffer.length > MAX_MESSAGE) return this.#fail(sizes);
    return sizes;
  }

  /** Stops for good; sizes decoded before the bad part are still returned once. */
  #fail(sizes: TerminalSize[] = []): TerminalSize[] | undefined {
    const first = !this.#failed;
    this.#failed = true;
    this.#buffer = "";
    return first && sizes.length > 0 ? sizes : undefined;
  }
}

/**
 * The latest terminal size, for one reader: offers while nobody reads replace each other, so
 * a client sending sizes faster than the container takes them holds one size, not a backlog.
 */
export class LatestResize implements AsyncIterable<TerminalSize> {
  #latest?: TerminalSize;
  #ended = false;
  #wake?: () => void;

  /** Replaces any size not yet read. */
  offer(size: TerminalSize): void {
    if (this.#ended) return;
    this.#latest = size;
    this.#wakeReader();
  }

  /** No more sizes; the reader ends after the last one. */
  end(): void {
    this.#ended = true;
    this.#wakeReader();
  }

  /** True once {@link end} was called. */
  get ended(): boolean {
    return this.#ended;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<TerminalSize> {
    for (;;) {
      const size = this.#latest;
      if (size) {
        this.#latest = undefined;
        yield size;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => this.#wake = resolve);
    }
  }

  #wakeReader(): void {
    this.#wake?.();
    this.#wake = undefined;
  }
}

/**
 * Reads a resize byte stream as it arrives (so an unread one never backs up its connection) and
 * returns its sizes coalesced to the latest. Ends at the end of the stream, its failure or the
 * first malformed or oversized message.
 */
export function latestResizes(readable: ReadableStream<Uint8Array>): AsyncIterable<TerminalSize> {
  const latest = new LatestResize();
  void (async () => {
    for await (const size of decodeResizeMessages(readable)) latest.offer(size);
  })().catch(() => {}).finally(() => latest.end());
  return latest;
}

/**
 * Splits a byte stream into top-level JSON objects and yields each valid size. Stops at the end
 * of the stream (or its failure) or at the first malformed or oversized message, as the kubelet
 * stops reading resizes after a decode error.
 */
export async function* decodeResizeMessages(
  readable: ReadableStream<Uint8Array>,
): AsyncGenerator<TerminalSize> {
  const decoder = new ResizeDecoder();
  const reader = readable.getReader();
  try {
    for (;;) {
      // A reset or closed connection ends the sizes quietly, like a clean end of stream.
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return;
      const sizes = decoder.push(next.value);
      if (sizes) yield* sizes;
      if (!sizes || decoder.failed) return;
    }
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
