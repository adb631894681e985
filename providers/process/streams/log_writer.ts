/**
 * Container logs on disk in the CRI format the kubelet reads (kubernetes/kubernetes
 * pkg/kubelet/kuberuntime/logs/logs.go): one line per output line,
 * `<RFC 3339 nano time> <stdout|stderr> <F|P> <text>`, so that `--timestamps`, `--since` and
 * `--tail` are answered from what was recorded. A {@link LogWriter} pumps an instance's stdout
 * and stderr FIFOs into `<instance>.log`, rotating to `.log.1`, `.log.2`... past the size cap,
 * and copies every record, with the same time, into the node's pod log directory (the kubelet's
 * `/var/log/pods` layout for log agents, ../../../provider/pod_log_dir.ts) when there is one.
 * @module
 */
import { type Clock, type ContainerLog, formatLogTime } from "../../../provider/mod.ts";
import { hostCommand } from "../host/host_tools.ts";

const NEWLINE = 10;
/** A line longer than this is written in parts tagged `P`, as CRI runtimes do. */
const MAX_LINE = 16 * 1024;
const encoder = new TextEncoder();

/** Options for {@link LogWriter}. */
export interface LogWriterOptions {
  /** The current file, e.g. `.../logs/0.log`. */
  path: string;
  maxBytes: number;
  /** Files kept per instance, the current one included. */
  maxFiles: number;
  clock: Clock;
  /** Opens the copy in the pod log directory (on the first write). */
  openCopy?: () => Promise<ContainerLog>;
}

/** Appends CRI log lines to one instance's log file, rotating it by size. */
export class LogWriter {
  readonly #options: LogWriterOptions;
  #file?: Deno.FsFile;
  #size = 0;
  #queue: Promise<void> = Promise.resolve();
  #copy?: Promise<ContainerLog | undefined>;

  constructor(options: LogWriterOptions) {
    this.#options = options;
  }

  /** Appends `text` (one line, without newline) as `stream`; writes are serialised. */
  write(stream: "stdout" | "stderr", text: Uint8Array, partial = false): Promise<void> {
    const stamp = formatLogTime(this.#options.clock.now());
    const head = encoder.encode(`${stamp} ${stream} ${partial ? "P" : "F"} `);
    const line = new Uint8Array(head.length + text.length + 1);
    line.set(head);
    line.set(text, head.length);
    line[line.length - 1] = NEWLINE;
    this.#queue = this.#queue.then(() => this.#append(line));
    const copy = this.#copyLog();
    if (copy) {
      // The copy is best effort: a full or read-only log disk must not stop the container.
      this.#queue = this.#queue.then(async () =>
        await (await copy)?.write(stream, text.slice(), { partial, time: stamp }).catch(() => {})
      );
    }
    return this.#queue;
  }

  /** Waits for queued writes and closes the file. */
  async close(): Promise<void> {
    await this.#queue.catch(() => {});
    await (await this.#copy)?.close().catch(() => {});
    this.#file?.close();
    this.#file = undefined;
  }

  #copyLog(): Promise<ContainerLog | undefined> | undefined {
    if (!this.#options.openCopy) return undefined;
    this.#copy ??= this.#options.openCopy().catch(() => undefined);
    return this.#copy;
  }

  async #append(line: Uint8Array): Promise<void> {
    if (!this.#file) {
      this.#file = await Deno.open(this.#options.path, { append: true, create: true, mode: 0o640 });
      this.#size = (await this.#file.stat()).size;
    }
    if (this.#size > 0 && this.#size + line.length > this.#options.maxBytes) await this.#rotate();
    let written = 0;
    while (written < line.length) written += await this.#file!.write(line.subarray(written));
    this.#size += line.length;
  }

  async #rotate(): Promise<void> {
    this.#file?.close();
    const { path, maxFiles } = this.#options;
    await Deno.remove(`${path}.${maxFiles - 1}`).catch(() => {});
    for (let n = maxFiles - 2; n >= 1; n--) {
      await Deno.rename(`${path}.${n}`, `${path}.${n + 1}`).catch(() => {});
    }
    if (maxFiles > 1) await Deno.rename(path, `${path}.1`);
    else await Deno.remove(path);
    this.#file = await Deno.open(path, { append: true, create: true, mode: 0o640 });
    this.#size = 0;
  }
}

/** Options for {@link pumpFifo}. */
export interface PumpOptions {
  stream: "stdout" | "stderr";
  writer: LogWriter;
  /** Bytes that end the pump without ending the instance. */
  stopMarker: Uint8Array;
  /** Called with the output as it arrives, before it is split into lines (attach). */
  onOutput?: (data: Uint8Array) => void;
  /** Ends the pump at once (its `cat` is killed): for a stop marker that never arrives. */
  signal?: AbortSignal;
}

/**
 * Copies one FIFO into `writer` line by line until every writer of the FIFO has gone (the
 * instance ended) or `stopMarker` arrives: vkubelet writes it to end the pump without ending
 * the container. The FIFO is read by a `cat` child through an ordinary pipe, because Deno reads
 * a FIFO on a blocking thread and its small pool (about 32 threads) would be used up by a few
 * dozen containers, stalling every other file operation. If vkubelet dies, `cat` ends at its
 * next write (SIGPIPE); the container keeps its FIFO open, so nothing else is lost.
 */
export async function pumpFifo(fifo: string, options: PumpOptions): Promise<void> {
  const { stream, writer, stopMarker, onOutput } = options;
  const cat = hostCommand("cat", {
    args: [fifo],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = cat.stdout.getReader();
  const kill = () => {
    try {
      cat.kill("SIGKILL");
    } catch {
      // ended already
    }
  };
  options.signal?.addEventListener("abort", kill, { once: true });
  if (options.signal?.aborted) kill();
  let pending: Uint8Array = new Uint8Array(0);
  /** How much of `pending` went to `onOutput` already. */
  let published = 0;
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      pending = concat(pending, value);
      const stop = indexOf(pending, stopMarker);
      if (stop >= 0) {
        pending = concat(pending.subarray(0, stop), pending.subarray(stop + stopMarker.length));
      }
      // What may be the start of a marker split across reads is held back until it is not.
      const safe = stop >= 0 ? pending.length : pending.length - prefixAtEnd(pending, stopMarker);
      if (onOutput && safe > published) onOutput(pending.subarray(published, safe));
      published = Math.max(published, safe);
      const before = pending.length;
      pending = await writeLines(pending, stream, writer);
      published = Math.max(published - (before - pending.length), 0);
      if (stop >= 0) break;
    }
    if (pending.length > 0) {
      if (onOutput && pending.length > published) onOutput(pending.subarray(published));
      await writer.write(stream, pending, true);
    }
  } finally {
    options.signal?.removeEventListener("abort", kill);
    kill();
    await reader.cancel().catch(() => {});
    await cat.status;
  }
}

/** The length of the longest proper prefix of `marker` that `data` ends with. */
export function prefixAtEnd(data: Uint8Array, marker: Uint8Array): number {
  for (let k = Math.min(marker.length - 1, data.length); k > 0; k--) {
    let match = true;
    for (let i = 0; i < k && match; i++) match = data[data.length - k + i] === marker[i];
    if (match) return k;
  }
  return 0;
}

/** Writes the complete lines of `data`; returns the unfinished rest. */
async function writeLines(
  data: Uint8Array,
  stream: "stdout" | "stderr",
  writer: LogWriter,
): Promise<Uint8Array> {
  let start = 0;
  while (true) {
    const end = data.indexOf(NEWLINE, start);
    if (end < 0) break;
    await writer.write(stream, data.subarray(start, end));
    start = end + 1;
  }
  while (data.length - start > MAX_LINE) {
    await writer.write(stream, data.subarray(start, start + MAX_LINE), true);
    start += MAX_LINE;
  }
  return data.slice(start);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b.slice();
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}
