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

/**
 * Splits a byte stream into top-level JSON objects and yields each valid size. Stops at the end
 * of the stream (or its failure) or at the first malformed or oversized message, as the kubelet stops reading
 * resizes after a decode error.
 */
export async function* decodeResizeMessages(
  readable: ReadableStream<Uint8Array>,
): AsyncGenerator<TerminalSize> {
  const decoder = new TextDecoder();
  let buffer = "";
  let depth = 0, inString = false, escaped = false, start = -1, scanned = 0;
  const reader = readable.getReader();
  try {
    for (;;) {
      // A reset or closed connection ends the sizes quietly, like a clean end of stream.
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (next.done) return;
      const value = next.value;
      buffer += decoder.decode(value, { stream: true });
      for (; scanned < buffer.length; scanned++) {
        const c = buffer[scanned];
        if (inString) {
          if (escaped) escaped = false;
          else if (c === "\\") escaped = true;
          else if (c === '"') inString = false;
        } else if (c === '"' && depth > 0) {
          inString = true;
        } else if (c === "{") {
          if (depth++ === 0) start = scanned;
        } else if (c === "}" && depth > 0) {
          if (--depth > 0) continue;
          const size = parseResizeMessage(buffer.slice(start, scanned + 1));
          if (!size) return;
          yield size;
          buffer = buffer.slice(scanned + 1);
          scanned = -1;
        } else if (depth === 0 && !/\s/.test(c)) {
          return;
        }
      }
      if (buffer.length > MAX_MESSAGE) return;
    }
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
