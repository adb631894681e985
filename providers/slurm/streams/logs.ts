/**
 * `kubectl logs` from a container's step output in the pod directory: each line as the batch
 * script stamped it (`<epoch seconds>.<microseconds> <text>`), with tail, since, timestamps and
 * limitBytes; `follow` polls the file for new lines until the signal aborts or `done()` says the
 * run ended and nothing is left to read. The job writes the file, so it is read through
 * `../ownership/job_files.ts` (only the job's own regular file, never through a link), a bounded chunk at
 * a time; `tailLines` keeps only the last lines of what is read before the end is reached.
 * @module
 */
import type { Clock, ContainerLogOptions } from "../../../provider/mod.ts";
import { type Owner, readJobFile } from "../ownership/job_files.ts";

/** The most read from the file at once. */
const CHUNK_BYTES = 1 << 20;
/** A line longer than this (no newline yet) is passed on in pieces. */
const MAX_LINE = 1 << 20;

/** Where the log is and how to follow it. */
export interface LogFile {
  path: string;
  /** The job's user, who must own the file. */
  owner: Owner;
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
  // tailLines: the last lines of what is there when the reader first reaches the end.
  let tail: Line[] | undefined = options.tailLines === undefined ? undefined : [];
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const next = await lines.next().catch((err) => {
          if (options.signal?.aborted) return { done: true as const, value: undefined };
          throw err;
        });
        if (next.done || left <= 0) return controller.close();
        let batch = next.value.lines.filter((l) => l.micros >= sinceMicros);
        if (tail) {
          const keep = options.tailLines ?? 0;
          tail = keep === 0 ? [] : [...tail, ...batch].slice(-keep);
          if (!next.value.atEnd) continue;
          batch = tail;
          tail = undefined;
        }
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

/**
 * Batches of lines: the file a chunk at a time, then (with follow) what was appended since;
 * `atEnd` once a batch reached what was the file's end when it was read.
 */
async function* followLines(file: LogFile, options: ContainerLogOptions) {
  const decoder = new TextDecoder();
  let offset = file.from ?? 0;
  let rest = "";
  for (;;) {
    const ended = file.done();
    const read = await readJobFile(file.path, file.owner, { offset, maxBytes: CHUNK_BYTES });
    const chunk = read?.bytes ?? new Uint8Array();
    offset += chunk.length;
    const atEnd = offset >= (read?.size ?? 0);
    const parsed = parseLines(rest + decoder.decode(chunk, { stream: true }));
    rest = parsed.rest;
    if (rest.length > MAX_LINE) {
      parsed.lines.push(...parseLines(rest + "\n").lines);
      rest = "";
    }
    if (!atEnd) {
      yield { lines: parsed.lines, atEnd };
      continue;
    }
    if (!options.follow || (ended && chunk.length === 0)) {
      if (rest) parsed.lines.push(...parseLines(rest + "\n").lines);
      yield { lines: parsed.lines, atEnd };
      return;
    }
    yield { lines: parsed.lines, atEnd };
    if (chunk.length === 0) await file.clock.sleep(file.pollMs ?? 250, options.signal);
  }
}
