/**
 * Helpers for a provider's `getContainerLogs`: log lines as the byte stream the core serves,
 * cut at `limitBytes` as the kubelet cuts them, and a line's time as the kubelet writes it.
 * @module
 */

/**
 * The lines (each with its own newline) as bytes, at most `limitBytes` of them (the last line
 * cut short, as the kubelet's `limitBytes` does); the lines' source is closed once the reader
 * has had enough or cancels, and an error from it errors the stream.
 *
 * @example Usage
 * ```ts
 * import { linesToStream } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * async function* lines() {
 *   yield "one\n";
 *   yield "two\n";
 * }
 * const text = await new Response(linesToStream(lines(), 6)).text();
 * assert.equal(text, "one\ntw");
 * ```
 */
export function linesToStream(
  lines: AsyncGenerator<string, unknown, undefined>,
  limitBytes?: number,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let left = limitBytes ?? Infinity;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await lines.next().catch((err) => {
        controller.error(err);
        return undefined;
      });
      if (!next) return;
      if (next.done || left <= 0) {
        controller.close();
        await lines.return(undefined);
        return;
      }
      let bytes = encoder.encode(next.value);
      if (bytes.length > left) bytes = bytes.subarray(0, left);
      left -= bytes.length;
      controller.enqueue(bytes);
      if (left <= 0) {
        controller.close();
        await lines.return(undefined);
      }
    },
    async cancel() {
      await lines.return(undefined);
    },
  });
}

/**
 * A time (epoch ms) as the kubelet stamps a log line with `timestamps`: RFC 3339 with
 * nanoseconds.
 *
 * @example Usage
 * ```ts
 * import { formatLogTime } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(formatLogTime(Date.UTC(2026, 0, 2, 3, 4, 5, 6)), "2026-01-02T03:04:05.006000000Z");
 * ```
 */
export function formatLogTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000000Z");
}
