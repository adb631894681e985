/**
 * Killing every process a container instance started, as a container runtime does when the
 * container's PID namespace or cgroup goes away: with a cgroup, every process in it
 * (../host/cgroups.ts `killCgroup`); without one, every process /proc ties to the instance by
 * session and parent (../host/proc.ts `instanceTree`), plus those seen when the stop began, whose
 * parents may have exited since.
 * @module
 */
import { killCgroup } from "../host/cgroups.ts";
import { isSameProcess, type ProcStat } from "../host/proc.ts";

/** SIGKILLs what is left of the instance led by `pid`; resolves once its cgroup is empty. */
export async function killInstance(
  instance: { pid: number; cgroup?: string },
  seen: ProcStat[],
  tree: (sid: number) => ProcStat[],
): Promise<void> {
  const targets = new Map<number, ProcStat>();
  for (const s of [...seen, ...tree(instance.pid)]) targets.set(s.pid, s);
  for (const s of targets.values()) {
    // A PID reused since it was seen belongs to someone else.
    if (!isSameProcess(s.pid, s.startTicks)) continue;
    try {
      Deno.kill(s.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  if (instance.cgroup) await killCgroup(instance.cgroup);
}
