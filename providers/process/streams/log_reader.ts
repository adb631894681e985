/**
 * Answers `kubectl logs` from an instance's CRI log files (./log_writer.ts), as the kubelet's
 * `ReadLogs` does (kubernetes/kubernetes pkg/kubelet/kuberuntime/logs/logs.go): rotated files
 * oldest first, `sinceTime`/`sinceSeconds` against the recorded times, `tailLines`, the time
 * prefix with `timestamps`, `limitBytes`, and `follow` until the instance has ended and its
 * file is drained, or the caller aborts.
 * @module
 */
import { type ContainerLogOptions, formatLogTime } from "../../../provider/mod.ts";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** Where one instance's log is and how to tell it has ended. */
export interface LogFileSource {
  /** Current file of the instance, e.g. `.../logs/3.log`. */
  path: string;
  maxFiles: number;
  /** True while the instance may still write. */
  isRunning: () => boolean;
  now: () => number;
  /** Aborts when the pod goes away. */
  stopped: AbortSignal;
}

/** One parsed CRI line. */
interface LogLine {
  time: string;
  text: string;
  partial: boolean;
}

function parseLine(line: string): LogLine | undefined {
  const first = line.indexOf(" ");
  const second = line.indexOf(" ", first + 1);
  const third = line.indexOf(" ", second + 1);
  if (first < 0 || second < 0 || third < 0) return undefined;
  return {
    time: line.slice(0, first),
    partial: line.slice(second + 1, third) === "P",
    text: line.slice(third + 1),
  };
}

function format(line: LogLine, timestamps: boolean | undefined): string {
  return `${timestamps ? `${line.time} ` : ""}${line.text}${line.partial ? "" : "\n"}`;
}

async function readText(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return "";
  }
}

/** The instance's rotated files and current file, oldest first, as parsed lines. */
async function readAll(source: LogFileSource): Promise<{ lines: LogLine[]; size: number }> {
  const lines: LogLine[] = [];
  for (let n = source.maxFiles - 1; n >= 1; n--) {
    for (const raw of (await readText(`${source.path}.${n}`)).split("\n")) {
      const line = parseLine(raw);
      if (line) lines.push(line);
    }
  }
  const current = await readText(source.path);
  for (const raw of current.split("\n")) {
    const line = parseLine(raw);
    if (line) lines.push(line);
  }
  return { lines, size: encoder.encode(current).length };
}

/**
 * The time of the oldest line to send. A `sinceSeconds` or `sinceTime` before 1970 (the API
 * allows up to 2^63 seconds) means every line: clamped, never an invalid date.
 */
function sinceTimestamp(options: ContainerLogOptions, now: number): string | undefined {
  const ms = options.sinceTime
    ? options.sinceTime.getTime()
    : options.sinceSeconds !== undefined
    ? now - options.sinceSeconds * 1000
    : undefined;
  if (ms === undefined || Number.isNaN(ms)) return undefined;
  return formatLogTime(Math.min(Math.max(0, ms), 8.64e15));
}

/** The log stream for `options` (see the module doc). */
export async function containerLogStream(
  source: LogFileSource,
  options: ContainerLogOptions,
): Promise<ReadableStream<Uint8Array>> {
  const { lines, size } = await readAll(source);
  const since = sinceTimestamp(options, source.now());
  let selected = since === undefined ? lines : lines.filter((l) => l.time >= since);
  if (options.tailLines !== undefined) {
    selected = options.tailLines <= 0 ? [] : selected.slice(-options.tailLines);
  }
  let budget = options.limitBytes ?? Infinity;
  const cancelled = new AbortController();
  const done = AbortSignal.any([
    source.stopped,
    cancelled.signal,
    ...(options.signal ? [options.signal] : []),
  ]);
  let backlog = selected.map((l) => format(l, options.timestamps)).join("");
  let offset = size;
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      while (!backlog && options.follow && !done.aborted) {
        const more = await readFrom(source.path, offset);
        if (more.rotated) offset = 0;
        else if (more.text) {
          offset += more.bytes;
          backlog = more.text.split("\n").map(parseLine).filter((l): l is LogLine => !!l)
            .map((l) => format(l, options.timestamps)).join("");
          continue;
        }
        if (!source.isRunning() && !more.rotated) break;
        await pause(200, done);
      }
      if (!backlog || budget <= 0) return controller.close();
      let bytes = encoder.encode(backlog);
      backlog = "";
      if (bytes.length >= budget) bytes = bytes.subarray(0, budget);
      budget -= bytes.length;
      controller.enqueue(bytes);
      if (budget <= 0) controller.close();
    },
    cancel: () => cancelled.abort(),
  });
}

/** Complete lines of `path` after byte `offset`; `rotated` if the file is now shorter. */
async function readFrom(
  path: string,
  offset: number,
): Promise<{ text: string; bytes: number; rotated: boolean }> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch {
    return { text: "", bytes: 0, rotated: false };
  }
  try {
    const { size } = await file.stat();
    if (size < offset) return { text: "", bytes: 0, rotated: true };
    if (size === offset) return { text: "", bytes: 0, rotated: false };
    await file.seek(offset, Deno.SeekMode.Start);
    const buffer = new Uint8Array(size - offset);
    let got = 0;
    while (got < buffer.length) {
      const n = await file.read(buffer.subarray(got));
      if (n === null) break;
      got += n;
    }
    const end = buffer.subarray(0, got).lastIndexOf(10) + 1;
    return { text: decoder.decode(buffer.subarray(0, end)), bytes: end, rotated: false };
  } finally {
    file.close();
  }
}

/** Waits `ms` of real time (file polling), or less if `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
