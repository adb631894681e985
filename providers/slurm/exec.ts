/**
 * `kubectl exec` as a job step of the pod's running job: `srun --overlap --jobid=N` (with
 * `--pty` for `-t`) runs the command with the container's env (the `export` lines of its
 * launcher) on the job's node. Needs SLURM's `srun` where vkubelet runs (the `cli` config).
 * @module
 */
import type { AttachIO } from "../../provider/mod.ts";

/** What one exec needs. */
export interface ExecTarget {
  /** `srun`'s path. */
  srun: string;
  jobId: number;
  /** The container's launcher script, whose `export` lines give the env. */
  launcher: string;
  command: string[];
  io: AttachIO;
  signal?: AbortSignal;
  /** Run srun as this user (`setpriv`), when vkubelet is root and jobs run as another user. */
  runAs?: { uid: number; gid: number };
}

/** Runs the command in the job; resolves with its exit code. */
export async function execInJob(target: ExecTarget): Promise<number> {
  const { io } = target;
  const args = [
    "--overlap",
    `--jobid=${target.jobId}`,
    "--ntasks=1",
    "--nodes=1",
    "--quiet",
    ...(io.tty ? ["--pty"] : []),
    "sh",
    "-c",
    'eval "$(grep "^export " "$0")"; exec "$@"',
    target.launcher,
    ...target.command,
  ];
  const asUser = target.runAs
    ? [`--reuid=${target.runAs.uid}`, `--regid=${target.runAs.gid}`, "--clear-groups"]
    : [];
  const child = new Deno.Command(target.runAs ? "setpriv" : target.srun, {
    args: target.runAs ? [...asUser, target.srun, ...args] : args,
    stdin: io.stdin ? "piped" : "null",
    stdout: io.stdout ? "piped" : "null",
    stderr: io.stderr ? "piped" : io.tty && io.stdout ? "piped" : "null",
    signal: target.signal,
  }).spawn();
  const pumps: Promise<unknown>[] = [];
  if (io.stdin) {
    // Not awaited: a command that never reads stdin must not wait for the client to close it.
    io.stdin.pipeTo(child.stdin).catch(() => {});
  }
  if (io.stdout) pumps.push(child.stdout.pipeTo(io.stdout, { preventClose: true }));
  const errTarget = io.stderr ?? (io.tty ? io.stdout : undefined);
  if (errTarget && (io.stderr || io.tty)) {
    pumps.push(
      io.stderr ? child.stderr.pipeTo(io.stderr, { preventClose: true }) : child.stderr.cancel(),
    );
  }
  const status = await child.status;
  await Promise.allSettled(pumps);
  return status.code;
}
