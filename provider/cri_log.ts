/**
 * The CRI log format the kubelet reads and node log agents parse: one record a line,
 * `<RFC 3339 nano time> <stdout|stderr> <P|F> <text>`, `P` for a part of a longer line. Output
 * is cut into records as containerd's CRI logger cuts it (containerd/containerd
 * internal/cri/io/logger.go `redirectLogs`): at each newline (a `\r\n` loses its `\r`), a line
 * longer than the limit (containerd's `max_container_log_line_size`, 16 KiB) in parts of
 * exactly the limit marked `P` with the rest `F`, and output that ends without a newline as a
 * last `P`.
 * @module
 */

/** The longest text of one record, as containerd's default `max_container_log_line_size`. */
export const CRI_MAX_LINE = 16 * 1024;

/** One CRI log record. */
export interface CriRecord {
  /** RFC 3339 time with nanoseconds, as written. */
  time: string;
  /** The stream the text came from. */
  stream: "stdout" | "stderr";
  /** True for a part of a longer line (`P`), false for a line's end (`F`). */
  partial: boolean;
  /** The text, without newline. */
  text: Uint8Array;
}

const NEWLINE = 10;
const CR = 13;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One record as its bytes in the file, newline included. */
export function formatCriRecord(record: CriRecord): Uint8Array {
  const head = encoder.encode(
    `${record.time} ${record.stream} ${record.partial ? "P" : "F"} `,
  );
  const out = new Uint8Array(head.length + record.text.length + 1);
  out.set(head);
  out.set(record.text, head.length);
  out[out.length - 1] = NEWLINE;
  return out;
}

/** One line of a CRI log file (without its newline) as a record; undefined if it is not one. */
export function parseCriRecord(line: string): CriRecord | undefined {
  const first = line.indexOf(" ");
  const second = line.indexOf(" ", first + 1);
  const third = line.indexOf(" ", second + 1);
  if (first <= 0 || second < 0 || third < 0) return undefined;
  const stream = line.slice(first + 1, second);
  const tag = line.slice(second + 1, third);
  if ((stream !== "stdout" && stream !== "stderr") || (tag !== "P" && tag !== "F")) {
    return undefined;
  }
  return {
    time: line.slice(0, first),
    stream,
    partial: tag === "P",
    text: encoder.encode(line.slice(third + 1)),
  };
}

/** A record's text as a string. */
export function criText(record: CriRecord): string {
  return decoder.decode(record.text);
}

/**
 * Cuts one stream's output into record texts as containerd does (see the module doc): feed
 * chunks with {@link push}, then {@link end} for what is left without a newline.
 *
 * @example Usage
 * ```ts
 * import { CriLineSplitter } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const split = new CriLineSplitter(4);
 * const parts = [...split.push(new TextEncoder().encode("abcdef\r\ngh")), ...split.end()];
 * assert.deepEqual(parts.map((p) => [new TextDecoder().decode(p.text), p.partial]), [
 *   ["abcd", true], ["ef", false], ["gh", true],
 * ]);
 * ```
 */
export class CriLineSplitter {
  readonly #maxLine: number;
  #pending: Uint8Array = new Uint8Array(0);

  /** `maxLine`: the longest text of one record (default {@link CRI_MAX_LINE}). */
  constructor(maxLine: number = CRI_MAX_LINE) {
    if (!(maxLine > 0)) throw new RangeError("maxLine must be a positive number of bytes");
    this.#maxLine = maxLine;
  }

  /** The records that `chunk` completes, in order; the unfinished rest is kept. */
  push(chunk: Uint8Array): { text: Uint8Array; partial: boolean }[] {
    const data = concat(this.#pending, chunk);
    const out: { text: Uint8Array; partial: boolean }[] = [];
    let start = 0;
    while (true) {
      const end = data.indexOf(NEWLINE, start);
      if (end < 0) break;
      const stop = end > start && data[end - 1] === CR ? end - 1 : end;
      this.#cut(data.subarray(start, stop), out, false);
      start = end + 1;
    }
    // A line past the limit is written in parts now, as containerd does, not when it ends.
    // A `\r` at the very end is held back: it may be the start of a `\r\n`.
    while (data.length - start > this.#maxLine) {
      out.push({ text: data.slice(start, start + this.#maxLine), partial: true });
      start += this.#maxLine;
    }
    this.#pending = data.slice(start);
    return out;
  }

  /** What is left without a newline, as a last `P` record (containerd's end of stream). */
  end(): { text: Uint8Array; partial: boolean }[] {
    const rest = this.#pending;
    this.#pending = new Uint8Array(0);
    return rest.length > 0 ? [{ text: rest, partial: true }] : [];
  }

  #cut(line: Uint8Array, out: { text: Uint8Array; partial: boolean }[], partial: boolean) {
    let start = 0;
    while (line.length - start > this.#maxLine) {
      out.push({ text: line.slice(start, start + this.#maxLine), partial: true });
      start += this.#maxLine;
    }
    out.push({ text: line.slice(start), partial });
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b.slice();
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * A time from a log line's RFC 3339 prefix as the kubelet writes it (UTC, nine fraction
 * digits), so that times from different backends compare as strings; undefined if `stamp` is
 * not a time.
 */
export function normalizeLogTime(stamp: string): string | undefined {
  const m = stamp.match(
    /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/,
  );
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(ms)) return undefined;
  const whole = new Date(ms).toISOString().slice(0, 19);
  return `${whole}.${(m[2] ?? "").padEnd(9, "0")}Z`;
}
