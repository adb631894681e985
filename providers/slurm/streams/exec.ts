/**
 * `kubectl exec` as a job step of the pod's running job: `srun --overlap --jobid=N` (with
 * `--pty` for `-t`) runs the command with the container's env (the `export` lines of its
 * launcher) on the job's node, and nothing of vkubelet's: srun runs with an environment of its
 * own (PATH and SLURM_CONF only) and `--export=NONE`, so the step starts from SLURM's own
 * `SLURM_*` variables (srun's default, `--export=ALL`, would hand the step vkubelet's whole
 * environment). Needs SLURM's `srun` where vkubelet runs (the `cli` config).
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  type AttachIO,
  type ExecOptions,
  NotFoundError,
  NotSupportedError,
} from "../../../provider/mod.ts";
import { apptainerExecShell } from "../request/apptainer.ts";
import type { SlurmConfig } from "../config.ts";
import { hostUser, jobUserOf } from "../ownership/identity.ts";
import { podDirOf } from "../request/pod_dir.ts";
import type { SlurmHandle } from "../status.ts";

/**
 * `kubectl exec` in the pod's container: a step of its running job (`handle`, as last read),
 * through the cli's srun, as the job's user, in the container's apptainer instance if any.
 */
export async function execInPod(
  config: SlurmConfig,
  target: { pod: Pod; handle?: SlurmHandle; container: string },
  options: ExecOptions,
): Promise<number> {
  const { pod, handle, container } = target;
  if (!config.cli) {
    throw new NotSupportedError(
      "exec needs srun on vkubelet's host: add cli to the slurm provider config (it may sit beside rest)",
    );
  }
  if (handle?.job?.state !== "RUNNING") {
    throw new NotFoundError(`container ${container} is not running; exec needs a running job`);
  }
  const bin = config.cli.bin;
  const user = jobUserOf(config, pod.metadata?.namespace ?? "");
  return await execInJob({
    srun: bin ? `${bin.replace(/\/$/, "")}/srun` : "srun",
    jobId: handle.jobId,
    launcher: `${podDirOf(config, pod)}/c/${container}.sh`,
    command: options.command,
    // In the container's apptainer instance, not beside it.
    run: config.runtime === "apptainer" ? apptainerExecShell(config, container) : undefined,
    io: options.io,
    signal: options.signal,
    // SLURM lets only the job's user add a step to it: vkubelet (root, since the pods'
    // directories belong to other users) becomes that user.
    runAs: user.uid === hostUser().uid ? undefined : user,
  });
}

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
  /** What runs the command once the env is set (`"$@"` is it); default `exec "$@"`. */
  run?: string;
  /** Run srun as this user (`setpriv`), when vkubelet is root and jobs run as another user. */
  runAs?: { uid: number; gid: number };
}

/** The step's PATH unless the container's env sets one (as the batch script's). */
const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** What srun needs of vkubelet's environment: where the commands and slurm.conf are. */
function srunEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: Deno.env.get("PATH") ?? DEFAULT_PATH };
  const conf = Deno.env.get("SLURM_CONF");
  if (conf) env.SLURM_CONF = conf;
  return env;
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
    "--export=NONE",
    ...(io.tty ? ["--pty"] : []),
    "/bin/sh",
    "-c",
    `export PATH=${DEFAULT_PATH}; eval "$(grep "^export " "$0")"; ${target.run ?? 'exec "$@"'}`,
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
    clearEnv: true,
    env: srunEnv(),
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
