/**
 * Process and machine figures from /proc: CPU seconds (utime + stime) and resident memory of
 * one process, and the machine's cores and memory for the report.
 * @module
 */

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU time a process has used so far, in seconds. */
export function cpuSeconds(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  // Fields after the command name, which may hold spaces, start after the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Resident set size and its peak, in MiB. */
export function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

/** Cores, memory, load and kernel of this machine. */
export function machine(): { cores: number; memoryGiB: number; cpuModel: string; load: string } {
  const cpuinfo = Deno.readTextFileSync("/proc/cpuinfo");
  const meminfo = Deno.readTextFileSync("/proc/meminfo");
  const cores = (cpuinfo.match(/^processor\s*:/gm) ?? []).length;
  const memKiB = Number(/^MemTotal:\s+(\d+)/m.exec(meminfo)?.[1] ?? 0);
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? "unknown";
  return {
    cores,
    memoryGiB: Math.round(memKiB / 1024 / 1024),
    cpuModel,
    load: Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" "),
  };
}

/**
 * Resident MiB of the process's `[heap]` mapping: glibc malloc's main arena, where Rust and
 * V8's own C++ allocations live (not the JavaScript heap, which V8 maps itself). It grows with
 * `brk` and only shrinks from its top, so it keeps what a busy moment allocated.
 */
export function brkHeapMiB(pid: number): number {
  const smaps = Deno.readTextFileSync(`/proc/${pid}/smaps`);
  const at = smaps.indexOf(" [heap]\n");
  if (at < 0) return 0;
  const rss = /^Rss:\s+(\d+) kB/m.exec(smaps.slice(at));
  return rss ? Number(rss[1]) / 1024 : 0;
}
