/**
 * Ends what a test's daemons leave running: processes found by a marker in their command line or
 * environment (a state dir, a `SLURM_CONF`), for harnesses whose children outlive their parent.
 * @module
 */

/** Where a process carries the marker. */
export type ProcessMarker = { cmdline: string } | { environ: string };

/**
 * SIGKILLs every process (and the process group it leads) whose `/proc/<pid>/cmdline` or
 * `environ` contains the marker, again until none is found or 10 s have passed.
 */
export async function killMarkedProcesses(marker: ProcessMarker): Promise<void> {
  const [file, needle] = "cmdline" in marker
    ? ["cmdline", marker.cmdline]
    : ["environ", marker.environ];
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    let found = 0;
    for (const entry of Deno.readDirSync("/proc")) {
      const pid = Number(entry.name);
      if (!Number.isInteger(pid) || pid === Deno.pid) continue;
      let text: string;
      try {
        text = Deno.readTextFileSync(`/proc/${pid}/${file}`);
      } catch {
        continue;
      }
      if (!text.includes(needle)) continue;
      found++;
      for (const target of [-pid, pid]) {
        try {
          Deno.kill(target, "SIGKILL");
        } catch {
          // not a group leader, or gone
        }
      }
    }
    if (found === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}
