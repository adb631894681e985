/**
 * One container instance's CRI log file (./cri_log.ts): appended to only, one write a record,
 * rotated as the kubelet's container log manager rotates (kubernetes/kubernetes
 * pkg/kubelet/logs/container_log_manager.go `rotateLog`): past `--container-log-max-size` the
 * file is renamed `<n>.log.<YYYYMMDD-hhmmss>` (the time in UTC), the rotated files before it are
 * gzip-compressed to `.gz` (through a `.tmp`), and only `--container-log-max-files` - 2 of those
 * are kept, oldest removed first, so that with the newest rotated file and the current one at
 * most max-files files remain. The kubelet checks sizes every 10 s (`containerLogMonitorInterval`);
 * here the check is made before each write, and a file is rotated only once it has been the
 * current file for {@link ContainerLogFileOptions.rotationIntervalMs} (10 s): a log agent that
 * polls for `*.log` more often sees every file before it is renamed away, also when a mirror
 * catches up a burst of lines. A file may run past the cap by that long's output, as the
 * kubelet's does; a second rotation in the same second also waits (the rotated name has second
 * precision).
 *
 * Crash safety: a record is one `write` to a file opened for appending; a file whose last
 * record was cut short (vkubelet died within a write) loses that tail when it is opened again,
 * and {@link ContainerLog.resumePoint} says where it ends, for a writer that resumes a stream.
 * @module
 */
import { type CriRecord, formatCriRecord, parseCriRecord } from "./cri_log.ts";
import { formatLogTime } from "./log_stream.ts";

/** Rotation numbers and the clock, as {@link PodLogDir} has them. */
export interface ContainerLogFileOptions {
  /** Bytes past which the file is rotated; negative: never. */
  maxBytes: number;
  /** Files kept, the current one included (≥ 2). */
  maxFiles: number;
  /** Gives the records' times and the rotated files' names. */
  clock: { now(): number };
  /**
   * A file is rotated no sooner than this after it became the current file, ms; default 10 000
   * (the kubelet's `containerLogMonitorInterval`).
   */
  rotationIntervalMs?: number;
}

/** Where a log ends: its last record's time and how many records end with that time. */
export interface ResumePoint {
  /** The last record's time, as written. */
  time: string;
  /** Records at the end of the log with exactly that time. */
  count: number;
}

const TAIL_BYTES = 64 * 1024;

/** An open container log; see the module doc. */
export class ContainerLog {
  /** The current file, `<n>.log`. */
  readonly path: string;
  readonly #options: ContainerLogFileOptions;
  #file: Deno.FsFile;
  #size: number;
  #resume?: ResumePoint;
  #queue: Promise<void> = Promise.resolve();
  #lastRotationName?: string;
  /** When the current file became current (opened, or made by a rotation). */
  #currentSinceMs: number;

  private constructor(
    path: string,
    file: Deno.FsFile,
    size: number,
    options: ContainerLogFileOptions,
  ) {
    this.path = path;
    this.#file = file;
    this.#size = size;
    this.#options = options;
    this.#currentSinceMs = options.clock.now();
  }

  /** Opens `path` for appending; a record cut short at its end is dropped first. */
  static async open(path: string, options: ContainerLogFileOptions): Promise<ContainerLog> {
    const file = await Deno.open(path, { read: true, append: true, create: true, mode: 0o640 });
    try {
      const { size } = await file.stat();
      const tail = await readTail(file, size);
      const end = tail.bytes.lastIndexOf(10) + 1;
      const kept = size - (tail.bytes.length - end);
      if (kept < size) await file.truncate(kept);
      const log = new ContainerLog(path, file, kept, options);
      log.#resume = resumeOf(tail.bytes.subarray(0, end));
      return log;
    } catch (err) {
      file.close();
      throw err;
    }
  }

  /** Where the log ended when it was opened, or after the last write; undefined if empty. */
  resumePoint(): ResumePoint | undefined {
    return this.#resume ? { ...this.#resume } : undefined;
  }

  /** Appends one record stamped now (or at `time`, an RFC 3339 nano time); writes are in order. */
  write(
    stream: "stdout" | "stderr",
    text: Uint8Array,
    options: { partial?: boolean; time?: string } = {},
  ): Promise<void> {
    const time = options.time ?? formatLogTime(this.#options.clock.now());
    return this.append({ time, stream, partial: options.partial ?? false, text });
  }

  /** Appends `record`; writes are serialised, and the promise is this write's. */
  append(record: CriRecord): Promise<void> {
    const bytes = formatCriRecord(record);
    const next = this.#queue.then(() => this.#append(bytes, record.time));
    this.#queue = next.catch(() => {});
    return next;
  }

  /** Waits for the writes queued and closes the file. */
  async close(): Promise<void> {
    await this.#queue;
    try {
      this.#file.close();
    } catch {
      // closed already
    }
  }

  async #append(bytes: Uint8Array, time: string): Promise<void> {
    const { maxBytes } = this.#options;
    const { rotationIntervalMs = 10_000, clock } = this.#options;
    if (
      maxBytes >= 0 && this.#size > 0 && this.#size + bytes.length > maxBytes &&
      clock.now() - this.#currentSinceMs >= rotationIntervalMs
    ) {
      await this.#rotate();
    }
    let written = 0;
    while (written < bytes.length) written += await this.#file.write(bytes.subarray(written));
    this.#size += bytes.length;
    this.#resume = this.#resume?.time === time
      ? { time, count: this.#resume.count + 1 }
      : { time, count: 1 };
  }

  /** The kubelet's `rotateLog`; skipped while a file rotated this second still has its name. */
  async #rotate(): Promise<void> {
    const name = `${this.path}.${rotationStamp(this.#options.clock.now())}`;
    if (name === this.#lastRotationName || await exists(name) || await exists(`${name}.gz`)) {
      return;
    }
    let rotated = await rotatedFiles(this.path);
    rotated = await removeExcess(rotated, Math.max(this.#options.maxFiles - 2, 0));
    for (const old of rotated) if (!old.endsWith(".gz")) await compress(old);
    await Deno.rename(this.path, name);
    this.#lastRotationName = name;
    this.#file.close();
    this.#file = await Deno.open(this.path, {
      read: true,
      append: true,
      create: true,
      mode: 0o640,
    });
    this.#size = 0;
    this.#currentSinceMs = this.#options.clock.now();
  }
}

/** `20060102-150405` (Go's layout in the kubelet's `timestampFormat`), in UTC. */
export function rotationStamp(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2006-01-02T15:04:05.000Z
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${
    iso.slice(14, 16)
  }${iso.slice(17, 19)}`;
}

/**
 * The rotated files of `path` in use, oldest first (the kubelet's `GetAllLogs` without the
 * current file); a `.tmp` left by a failed compression, and a file whose `.gz` exists, are
 * removed (its `cleanupUnusedLogs`).
 */
export async function rotatedFiles(path: string): Promise<string[]> {
  const slash = path.lastIndexOf("/");
  const dir = path.slice(0, slash);
  const base = `${path.slice(slash + 1)}.`;
  let names: string[];
  try {
    names = (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name)
      .filter((n) => n.startsWith(base));
  } catch {
    return [];
  }
  const inUse: string[] = [];
  for (const n of names) {
    const unused = n.endsWith(".tmp") || names.includes(`${n}.gz`);
    if (unused) await Deno.remove(`${dir}/${n}`).catch(() => {});
    else inUse.push(`${dir}/${n}`);
  }
  return inUse.sort();
}

/** The records of the log, rotated files (decompressed) oldest first, then the current file. */
export async function readContainerLog(path: string): Promise<CriRecord[]> {
  const records: CriRecord[] = [];
  for (const file of [...await rotatedFiles(path), path]) {
    let bytes: Uint8Array<ArrayBuffer>;
    try {
      bytes = await Deno.readFile(file);
    } catch {
      continue;
    }
    if (file.endsWith(".gz")) {
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    }
    for (const line of new TextDecoder().decode(bytes).split("\n")) {
      const record = parseCriRecord(line);
      if (record) records.push(record);
    }
  }
  return records;
}

async function removeExcess(files: string[], keep: number): Promise<string[]> {
  const excess = files.length - keep;
  for (let i = 0; i < excess; i++) await Deno.remove(files[i]).catch(() => {});
  return files.slice(Math.max(excess, 0));
}

async function compress(path: string): Promise<void> {
  const tmp = `${path}.gz.tmp`;
  try {
    const source = await Deno.open(path, { read: true });
    const target = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o640 });
    await source.readable.pipeThrough(new CompressionStream("gzip")).pipeTo(target.writable);
    await Deno.rename(tmp, `${path}.gz`);
    await Deno.remove(path);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

async function readTail(file: Deno.FsFile, size: number): Promise<{ bytes: Uint8Array }> {
  const start = Math.max(0, size - TAIL_BYTES);
  const bytes = new Uint8Array(size - start);
  await file.seek(start, Deno.SeekMode.Start);
  let got = 0;
  while (got < bytes.length) {
    const n = await file.read(bytes.subarray(got));
    if (n === null) break;
    got += n;
  }
  return { bytes: bytes.subarray(0, got) };
}

function resumeOf(complete: Uint8Array): ResumePoint | undefined {
  const lines = new TextDecoder().decode(complete).split("\n").filter((l) => l);
  let resume: ResumePoint | undefined;
  for (let i = lines.length - 1; i >= 0; i--) {
    const record = parseCriRecord(lines[i]);
    if (!record) continue;
    if (!resume) resume = { time: record.time, count: 1 };
    else if (record.time === resume.time) resume.count++;
    else break;
  }
  return resume;
}
