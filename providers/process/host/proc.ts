/**
 * Reading `/proc`: a process's identity (PID plus start time, so a reused PID is never taken
 * for the process we started), the members of a container's session, and CPU and memory use
 * of processes and of the node.
 * @module
 */
import { hostCommand } from "./host_tools.ts";

const decoder = new TextDecoder();
/** Set once Deno refuses a direct read of /proc (it wants --allow-all for that). */
let viaSubprocess = false;

/**
 * Reads a /proc file. Deno allows /proc only with --allow-all, so without it the read goes
 * through `cat` (--allow-run), which the provider needs anyway.
 */
export function readProcText(path: string): string {
  if (!viaSubprocess) {
    try {
      return Deno.readTextFileSync(path);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotCapable)) throw err;
      viaSubprocess = true;
    }
  }
  const out = hostCommand("cat", { args: [path], stdout: "piped", stderr: "null" })
    .outputSync();
  if (!out.success) throw new Deno.errors.NotFound(`cannot read ${path}`);
  return decoder.decode(out.stdout);
}

/** Reads a /proc symlink (`/proc/<pid>/fd/0`, `/proc/<pid>/root`), as {@link readProcText}. */
export function readProcLink(path: string): string {
  if (!viaSubprocess) {
    try {
      return Deno.readLinkSync(path);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotCapable)) throw err;
      viaSubprocess = true;
    }
  }
  const out = hostCommand("readlink", { args: [path], stdout: "piped", stderr: "null" })
    .outputSync();
  if (!out.success) throw new Deno.errors.NotFound(`cannot read ${path}`);
  return decoder.decode(out.stdout).trim();
}

/** The stat line of every process, read in one go. */
function allStatLines(): string[] {
  if (!viaSubprocess) {
    try {
      const lines: string[] = [];
      for (const entry of Deno.readDirSync("/proc")) {
        if (!/^\d+$/.test(entry.name)) continue;
        try {
          lines.push(Deno.readTextFileSync(`/proc/${entry.name}/stat`));
        } catch (err) {
          if (err instanceof Deno.errors.NotCapable) throw err;
        }
      }
      return lines;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotCapable)) throw err;
      viaSubprocess = true;
    }
  }
  const out = hostCommand("sh", {
    args: ["-c", "cat /proc/[0-9]*/stat 2>/dev/null; true"],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  return decoder.decode(out.stdout).split("\n").filter(Boolean);
}

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`; 100 on Linux). */
export const CLOCK_TICKS = 100;
/** Bytes per page for `/proc/<pid>/stat` rss. */
export const PAGE_SIZE = 4096;

/** The fields of `/proc/<pid>/stat` we use. */
export interface ProcStat {
  pid: number;
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** User plus system CPU time, in clock ticks. */
  cpuTicks: number;
  /** Start time after boot, in clock ticks: with the PID, the process's identity. */
  startTicks: number;
  rssBytes: number;
}

/** Parses one `/proc/<pid>/stat` line; `comm` may hold spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(")");
  if (close < 0) return undefined;
  const pid = Number(text.slice(0, text.indexOf(" ")));
  // Fields after comm, numbered from 3 (state) as in proc(5).
  const f = text.slice(close + 2).trim().split(" ");
  const at = (n: number) => Number(f[n - 3]);
  return {
    pid,
    state: f[0],
    ppid: at(4),
    pgrp: at(5),
    session: at(6),
    cpuTicks: at(14) + at(15),
    startTicks: at(22),
    rssBytes: at(24) * PAGE_SIZE,
  };
}

/** The stat of `pid`, or `undefined` if there is no such process. */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readProcText(`/proc/${pid}/stat`));
  } catch {
    return undefined;
  }
}

/** True if `pid` is alive (not a zombie) and started at `startTicks`: the same process. */
export function isSameProcess(pid: number, startTicks: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.startTicks === startTicks && stat.state !== "Z";
}

/** Every live process whose session is `sid` (a container's wrapper starts its own session). */
export function sessionMembers(sid: number): ProcStat[] {
  const out: ProcStat[] = [];
  for (const line of allStatLines()) {
    const stat = parseProcStat(line);
    if (stat && stat.session === sid && stat.state !== "Z") out.push(stat);
  }
  return out;
}

/**
 * Every live process /proc can tie to a container instance whose runner leads session `sid`:
 * the session's members and, transitively, their children, which finds a child that called
 * `setsid` while its parent lives. A process whose parent exited before this walk (a double
 * fork) is reparented away and found only through the instance's cgroup (../launch/reaper.ts).
 */
export function instanceTree(sid: number): ProcStat[] {
  const all = allStatLines().map(parseProcStat).filter((s): s is ProcStat =>
    s !== undefined && s.state !== "Z"
  );
  const found = new Map<number, ProcStat>();
  for (const s of all) if (s.session === sid) found.set(s.pid, s);
  let grew = found.size > 0;
  while (grew) {
    grew = false;
    for (const s of all) {
      if (!found.has(s.pid) && found.has(s.ppid)) {
        found.set(s.pid, s);
        grew = true;
      }
    }
  }
  return [...found.values()];
}

/** CPU (core-nanoseconds) and resident memory (bytes) summed over processes. */
export function usageOf(stats: ProcStat[]): { cpuNs: number; rssBytes: number } {
  let ticks = 0;
  let rss = 0;
  for (const s of stats) {
    ticks += s.cpuTicks;
    rss += s.rssBytes;
  }
  return { cpuNs: ticks * (1e9 / CLOCK_TICKS), rssBytes: rss };
}

/** The node's CPU time in use (all CPUs, without idle and iowait), in core-nanoseconds. */
export function nodeCpuNs(): number {
  const line = readProcText("/proc/stat").split("\n")[0];
  const [, ...fields] = line.trim().split(/\s+/).map(Number);
  const busy = fields.reduce((a, b) => a + b, 0) - (fields[3] ?? 0) - (fields[4] ?? 0);
  return busy * (1e9 / CLOCK_TICKS);
}

/** `/proc/meminfo` in bytes, by field name (`MemTotal`, `MemAvailable`, ...). */
export function memInfo(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readProcText("/proc/meminfo").split("\n")) {
    const match = /^(\w+(?:\(\w+\))?):\s+(\d+)(?: kB)?$/.exec(line);
    if (match) out[match[1]] = Number(match[2]) * (line.endsWith("kB") ? 1024 : 1);
  }
  return out;
}

/** The children of `pid` (from `/proc/<pid>/task/<pid>/children`). */
export function childrenOf(pid: number): number[] {
  try {
    const text = readProcText(`/proc/${pid}/task/${pid}/children`);
    return text.trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * The host PID of the process that is `nsPid` in the PID namespace of instance `sid`'s
 * processes (from the `NSpid` line of `/proc/<pid>/status`); `nsPid` itself outside one.
 */
export function hostPidOf(sid: number, nsPid: number): number | undefined {
  for (const { pid } of instanceTree(sid)) {
    try {
      const ids = /^NSpid:\s+(.*)$/m.exec(readProcText(`/proc/${pid}/status`))?.[1].split(/\s+/);
      if (ids && ids.length > 1 && Number(ids[ids.length - 1]) === nsPid) return pid;
    } catch {
      // gone
    }
  }
  return undefined;
}
