/**
 * `kubectl logs` from a container's step output in the pod directory: each line as the batch
 * script stamped it (`<epoch seconds>.<microseconds> <text>`), with tail, since, timestamps and
 * limitBytes; `follow` polls the file for new lines until the signal aborts or `done()` says the
 * run ended and nothing is left to read.
 * @module
 */
import type { Clock, ContainerLogOptions } from "../../provider/mod.ts";

/** Where the log is and how to follow it. */
export interface LogFile {
  path: string;
  clock: Clock;
  /** True once the run has ended: following stops at the end of the file. */
  done: () => boolean;
  pollMs?: number;
  /** The byte offset to read from (an attach session: what was written before it is not its). */
  from?: number;
}

/** A stamped line: its time in microseconds since the epoch and its text with the newline. */
interface Line {
  micros: number;
  text: string;
}

/** Splits complete stamped lines off `buffer`; returns them and the unfinished rest. */
export function parseLines(buffer: string): { lines: Line[]; rest: string } {
  const parts = buffer.split("\n");
  const rest = parts.pop() ?? "";
  const lines = parts.map((raw) => {
    const m = /^(\d+)\.(\d{1,6}) ?(.*)$/s.exec(raw);
    if (!m) return { micros: 0, text: `${raw}\n` };
    return { micros: Number(m[1]) * 1e6 + Number(m[2].padEnd(6, "0")), text: `${m[3]}\n` };
  });
  return { lines, rest };
}

/** A line's time as the kubelet writes it: RFC 3339 with nanoseconds. */
export function formatLogTime(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const nanos = String(micros % 1e6).padStart(6, "0") + "000";
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, `.${nanos}Z`);
}

/** The container's log as bytes; with `follow`, open until the signal aborts or the run ends. */
export function readLogFile(
  file: LogFile,
  options: ContainerLogOptions,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let left = options.limitBytes ?? Infinity;
  const sinceMicros = options.sinceTime
    ? options.sinceTime.getTime() * 1000
    : options.sinceSeconds !== undefined
    ? (file.clock.now() - options.sinceSeconds * 1000) * 1000
    : 0;
  const render = (l: Line) =>
    encoder.encode(options.timestamps ? `${formatLogTime(l.micros)} ${l.text}` : l.text);
  const lines = followLines(file, options);
  let first = true;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const next = await lines.next().catch((err) => {
          if (options.signal?.aborted) return { done: true as const, value: undefined };
          throw err;
        });
        if (next.done || left <= 0) return controller.close();
        let batch = next.value.filter((l) => l.micros >= sinceMicros);
        if (first && options.tailLines !== undefined) {
          batch = options.tailLines === 0 ? [] : batch.slice(-options.tailLines);
        }
        first = false;
        if (batch.length === 0) continue;
        for (const l of batch) {
          let bytes = render(l);
          if (bytes.length > left) bytes = bytes.subarray(0, left);
          left -= bytes.length;
          controller.enqueue(bytes);
          if (left <= 0) return controller.close();
        }
        return;
      }
    },
    async cancel() {
      await lines.return(undefined);
    },
  });
}

/** Batches of lines: the whole file first, then (with follow) what was appended since. */
async function* followLines(file: LogFile, options: ContainerLogOptions) {
  const decoder = new TextDecoder();
  let offset = file.from ?? 0;
  let rest = "";
  for (;;) {
    const ended = file.done();
    const chunk = await readFrom(file.path, offset);
    offset += chunk.length;
    const parsed = parseLines(rest + decoder.decode(chunk, { stream: true }));
    rest = parsed.rest;
    yield parsed.lines;
    if (!options.follow || (ended && chunk.length === 0)) {
      if (rest) yield parseLines(rest + "\n").lines;
      return;
    }
    if (chunk.length === 0) await file.clock.sleep(file.pollMs ?? 250, options.signal);
  }
}

async function readFrom(path: string, offset: number): Promise<Uint8Array> {
  let f: Deno.FsFile;
  try {
    f = await Deno.open(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return new Uint8Array();
    throw err;
  }
  try {
    await f.seek(offset, Deno.SeekMode.Start);
    const { size } = await f.stat();
    const out = new Uint8Array(Math.max(0, size - offset));
    let read = 0;
    while (read < out.length) {
      const n = await f.read(out.subarray(read));
      if (n === null) break;
      read += n;
    }
    return out.subarray(0, read);
  } finally {
    f.close();
  }
}
