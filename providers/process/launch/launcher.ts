/**
 * Starting a container instance as a process tree that does not depend on vkubelet: a small
 * sh runner in its own session and process group (`detached: true`) opens the instance's
 * stdout/stderr FIFOs read-write (so a vkubelet restart never breaks its pipes), joins its
 * cgroup, opens the container's environment file on fd 9, runs the command in the foreground
 * and writes its exit status to a file, so that even an exit while vkubelet is down is known
 * afterwards. The runner is root's (when vkubelet is) and stays on the host's root with
 * vkubelet's fixed environment; the command it runs drops the privileges, enters the view and
 * only then takes the container's environment (./entry.ts). With a view, the runner starts
 * under `unshare -m --pid --fork --mount-proc`: a private mount namespace in which it builds the
 * view (./mount_ns.ts), and a PID namespace of the container's own whose procfs the view shows,
 * as the kubelet gives each container unless the pod sets `shareProcessNamespace`. A process is
 * identified by PID plus `/proc` start time: the PID of `unshare`, which waits for the runner
 * (PID 1 of the namespace), and whose end ends the namespace and every process in it.
 * @module
 */
import { type ProcStat, readProcStat } from "../host/proc.ts";
import { type HiddenPaths, shellQuote, type ViewMount, viewScript } from "./mount_ns.ts";
import { HELPER_ENV, hostCommand, toolPath } from "../host/host_tools.ts";
import { CLOSE_INHERITED } from "./entry.ts";

// The runner's arguments: exit file, stdout, stderr, stdin FIFO ("" = /dev/null), stdin
// holder's PID file, cgroup.procs files separated by ":" ("" = none; cgroup v1 has one per
// hierarchy), the environment file, then the command (./entry.ts). A trapped TERM/INT waits
// for the foreground command instead of ending the runner, and is reset to default in the
// command itself. The command reads stdin from the FIFO but holds no writer of it: a
// background \`sleep\` (the holder) does, so the command sees EOF only once the holder is killed
// (stdinOnce) and no attach session writes any more; the holder is in the runner's process
// group and goes with the instance. In a PID namespace, \`$$\` and \`$!\` are the namespace's
// numbers: cgroup.procs reads them so, and vkubelet maps the holder's back (../host/proc.ts).
// Descriptors vkubelet inherited are closed first, those sh can name (./inherited_fds.ts).
const RUNNER = `exit_file=$1 out=$2 err=$3 in=$4 hold=$5 cg=$6 env=$7
shift 7
${CLOSE_INHERITED}
if [ -n "$cg" ]; then IFS=:; for f in $cg; do echo $$ > "$f"; done; unset IFS; fi
exec 1<>"$out" 2<>"$err"
if [ -n "$in" ]; then
  exec 3<>"$in" 0<"$in"
  sleep 2147483647 0</dev/null 1>/dev/null 2>&1 &
  echo $! > "$hold"
  exec 3>&-
else exec 0</dev/null; fi
if ! [ -f "$env" ]; then echo "vkubelet: no environment file $env" >&2; echo 128 > "$exit_file"; exit 128; fi
exec 9<"$env"
trap : TERM INT HUP
"$@"
code=$?
echo "$code" > "$exit_file.tmp" && mv -f "$exit_file.tmp" "$exit_file"
exit "$code"`;

/** Everything needed to start one instance. */
export interface LaunchSpec {
  /** What the runner runs: the entry (./entry.ts), the working directory and the command. */
  argv: string[];
  /** The container's environment file (./entry.ts `writeEnvFile`). */
  envFile: string;
  exitFile: string;
  stdoutFifo: string;
  stderrFifo: string;
  /** With stdin (`stdin: true`): the FIFO the command reads, and where the holder's PID goes. */
  stdin?: { fifo: string; holderPidFile: string };
  /** `cgroup.procs` of the instance's cgroup(s), separated by `:` (../host/cgroups.ts). */
  cgroupProcs?: string;
  /** The pod's network namespace (a netns file), joined before anything else. */
  netns?: string;
  /** Present to start in a private mount namespace with this view. */
  view?: { root: string; mounts: ViewMount[]; extraDirs: string[]; hidden?: HiddenPaths };
}

/** A running instance's process (the runner; its session holds the command's processes). */
export interface ProcessHandle {
  pid: number;
  startTicks: number;
  /** Resolves when the runner has exited. */
  exited: Promise<void>;
  /** What the mount-namespace set-up printed (empty when it succeeded or was not used). */
  setupErrors: Promise<string>;
}

/** Creates the FIFOs an instance writes to. */
export async function makeFifos(paths: string[]): Promise<void> {
  for (const path of paths) await Deno.remove(path).catch(() => {});
  const out = await hostCommand("mkfifo", { args: ["-m", "600", ...paths], stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`mkfifo failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

/** The argv that starts `spec`: sh, or unshare + sh that builds the view, then runs sh. */
export function launchArgv(spec: LaunchSpec): string[] {
  const runnerArgs = [
    spec.exitFile,
    spec.stdoutFifo,
    spec.stderrFifo,
    spec.stdin?.fifo ?? "",
    spec.stdin?.holderPidFile ?? "",
    spec.cgroupProcs ?? "",
    spec.envFile,
    ...spec.argv,
  ];
  const sh = toolPath("sh");
  // The pod's network namespace first: the mount and PID namespaces are made inside it.
  const net = spec.netns ? [toolPath("nsenter"), `--net=${spec.netns}`, "--"] : [];
  if (!spec.view) return [...net, sh, "-c", RUNNER, RUNNER_NAME, ...runnerArgs];
  const setup = [
    ...viewScript(spec.view.root, spec.view.mounts, spec.view.extraDirs, spec.view.hidden),
    `exec ${sh} -c ${shellQuote(RUNNER)} ${RUNNER_NAME} "$@"`,
  ].join("\n");
  return [
    ...net,
    toolPath("unshare"),
    "-m",
    "--propagation",
    "private",
    "--pid",
    "--fork",
    "--kill-child",
    "--mount-proc",
    "--",
    sh,
    "-c",
    setup,
    "vkubelet-setup",
    ...runnerArgs,
  ];
}

/** The runner's `$0`: its command line says the view is built once it shows this. */
export const RUNNER_NAME = "vkubelet-runner";

/** Starts the instance in its own session; the handle's `exited` settles when it ends. */
export function launch(spec: LaunchSpec): ProcessHandle {
  const [cmd, ...args] = launchArgv(spec);
  // The program is an absolute path and the environment vkubelet's own (../host/host_tools.ts).
  const child = new Deno.Command(cmd, {
    args,
    clearEnv: true,
    env: { ...HELPER_ENV },
    detached: true,
    stdin: "null",
    stdout: "null",
    // Only the view's set-up (mount, chroot) writes here: the runner then moves stderr to its
    // FIFO. Its messages explain a start that failed before the command ran.
    stderr: spec.view ? "piped" : "null",
  }).spawn();
  const stat = readProcStat(child.pid);
  const setupErrors = spec.view
    ? new Response(child.stderr).text().catch(() => "")
    : Promise.resolve("");
  return {
    pid: child.pid,
    startTicks: stat?.startTicks ?? 0,
    exited: child.status.then(() => {}),
    setupErrors,
  };
}

/** A handle for a process vkubelet did not start (re-adopted after a restart). */
export function adopt(
  pid: number,
  startTicks: number,
  sleep: (ms: number) => Promise<void>,
  signal: AbortSignal,
): ProcessHandle {
  const exited = (async () => {
    while (!signal.aborted && isAlive(readProcStat(pid), startTicks)) await sleep(250);
  })();
  return { pid, startTicks, exited, setupErrors: Promise.resolve("") };
}

function isAlive(stat: ProcStat | undefined, startTicks: number): boolean {
  return stat !== undefined && stat.startTicks === startTicks && stat.state !== "Z";
}

/** Sends `signal` to the instance's process group; false if the group is gone. */
export function signalGroup(pid: number, signal: Deno.Signal): boolean {
  try {
    Deno.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Reads an instance's exit file: the command's exit status, if the runner wrote one. */
export async function readExitFile(
  path: string,
): Promise<{ code: number; atMs: number } | undefined> {
  try {
    const [text, info] = await Promise.all([Deno.readTextFile(path), Deno.stat(path)]);
    const code = Number(text.trim());
    if (!Number.isInteger(code)) return undefined;
    return { code, atMs: info.mtime?.getTime() ?? Date.now() };
  } catch {
    return undefined;
  }
}
