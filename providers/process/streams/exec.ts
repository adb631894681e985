/**
 * Running commands inside a container (`kubectl exec`, exec probes and hooks): a root stage of
 * host programs with vkubelet's fixed environment opens the container's environment file on
 * fd 9, joins the container's mount and PID namespaces when it has them (`nsenter -t <PID 1 of
 * the container> -m -p`), and hands over to the container's entry (../launch/entry.ts), which
 * drops to the container's user and capabilities, enters its view, loads the environment,
 * changes to the working directory and execs the command. A TTY comes from util-linux `script`
 * (`script -q -e -c CMD /dev/null`), resized with `stty -F /dev/pts/N rows R cols C`.
 * @module
 */
import type { AttachIO, TerminalSize } from "../../../provider/mod.ts";
import { OPEN_ENV } from "../launch/entry.ts";
import { HELPER_ENV, hostCommand, toolPath } from "../host/host_tools.ts";
import { shellQuote } from "../launch/mount_ns.ts";
import { childrenOf, readProcLink } from "../host/proc.ts";

/** Where and how a container's commands run. */
export interface ExecContext {
  /** The container's runner process (with a view, `unshare`, parent of the namespace's PID 1). */
  pid: number;
  namespaced: boolean;
  /** The pod's network namespace (a netns file), which exec, probes and hooks enter too. */
  netns?: string;
  /** The pod's IP in that namespace: where httpGet and tcpSocket actions go by default. */
  podIp?: string;
  env: Record<string, string>;
  /** The container's environment file, root's only (../launch/entry.ts). */
  envFile: string;
  /**
   * The working directory and the fallback if it cannot be entered ("" for none;
   * ../launch/entry.ts).
   */
  workingDir: [string, string];
  /** The argv that drops to the container's identity and enters its view (../launch/entry.ts). */
  entry: string[];
}

/**
 * The argv that runs `command` in the container; throws if its namespace is gone. With `tty`,
 * util-linux `script` gives it a terminal from inside the container's namespaces, where
 * `/dev/pts` is the view's own devpts (../launch/mount_ns.ts), so that the terminal is found by
 * name in the view (`tty`, tmux) as in a container.
 */
export function execCommand(ctx: ExecContext, command: string[], tty = false): string[] {
  const entry = [...ctx.entry, ...ctx.workingDir, ...command];
  const run = tty
    ? [toolPath("script"), "-q", "-e", "-c", entry.map(shellQuote).join(" "), "/dev/null"]
    : entry;
  const net = ctx.netns ? [`--net=${ctx.netns}`] : [];
  const inner = ctx.namespaced
    ? [toolPath("nsenter"), "-t", String(namespacePid(ctx.pid)), "-m", "-p", ...net, "--", ...run]
    : ctx.netns
    ? [toolPath("nsenter"), ...net, "--", ...run]
    : run;
  return [toolPath("sh"), "-c", OPEN_ENV, "vkubelet-exec", ctx.envFile, ...inner];
}

/** PID 1 of the container's PID namespace: the child `unshare --fork` started. */
function namespacePid(unsharePid: number): number {
  const [child] = childrenOf(unsharePid);
  if (child === undefined) throw new Error("the container's processes have ended");
  return child;
}

/** The host program of argv[0] (an absolute path) with vkubelet's fixed environment. */
function helper(
  argv: string[],
  options: Omit<Deno.CommandOptions, "args" | "env" | "clearEnv">,
  env: Record<string, string> = {},
): Deno.Command {
  return new Deno.Command(argv[0], {
    ...options,
    args: argv.slice(1),
    clearEnv: true,
    env: { ...HELPER_ENV, ...env },
  });
}

/** Runs `command` to completion with output captured (probes, hooks); kills it at `timeoutMs`. */
export async function runCaptured(
  ctx: ExecContext,
  command: string[],
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ code: number; output: string; timedOut: boolean }> {
  const deadline = AbortSignal.timeout(timeoutMs);
  let child: Deno.ChildProcess;
  try {
    child = helper(execCommand(ctx, command), {
      detached: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    return { code: 127, output: `exec ${command[0]}: ${err}`, timedOut: false };
  }
  const stop = () => killGroup(child.pid);
  const stopOn = AbortSignal.any([deadline, ...(signal ? [signal] : [])]);
  stopOn.addEventListener("abort", stop, { once: true });
  try {
    const [status, out, err] = await Promise.all([
      child.status,
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
    ]);
    return { code: status.code, output: (out + err).slice(0, 10_240), timedOut: deadline.aborted };
  } finally {
    stopOn.removeEventListener("abort", stop);
  }
}

function killGroup(pid: number): void {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Runs an interactive exec session (see AttachIO); resolves with the exit code. */
export async function runInteractive(
  ctx: ExecContext,
  command: string[],
  io: AttachIO,
  signal?: AbortSignal,
): Promise<number> {
  const argv = execCommand(ctx, command, io.tty);
  // script runs CMD with $SHELL; TERM is xterm unless the container's environment says otherwise.
  const env: Record<string, string> = io.tty ? { SHELL: toolPath("sh"), TERM: "xterm" } : {};
  const child = helper(argv, {
    detached: true,
    stdin: io.stdin || io.tty ? "piped" : "null",
    stdout: "piped",
    stderr: io.tty ? "null" : "piped",
  }, env).spawn();
  const stop = () => killGroup(child.pid);
  signal?.addEventListener("abort", stop, { once: true });
  const exited = child.status;
  try {
    const copies = [
      copyOut(child.stdout, io.stdout),
      io.tty ? Promise.resolve() : copyOut(child.stderr, io.stderr),
      copyIn(io.stdin, io.stdin || io.tty ? child.stdin : undefined, exited),
    ];
    if (io.tty && io.resize) copies.push(resizeLoop(child.pid, io.resize, exited));
    const status = await exited;
    await Promise.allSettled(copies);
    return status.signal ? 128 + signalNumber(status.signal) : status.code;
  } finally {
    signal?.removeEventListener("abort", stop);
  }
}

function signalNumber(signal: Deno.Signal): number {
  const numbers: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return numbers[signal] ?? 1;
}

async function copyOut(from: ReadableStream<Uint8Array>, to?: WritableStream<Uint8Array>) {
  if (!to) return await from.cancel();
  const writer = to.getWriter();
  try {
    for await (const chunk of from) await writer.write(chunk);
  } finally {
    writer.releaseLock();
  }
}

async function copyIn(
  from: ReadableStream<Uint8Array> | undefined,
  to: WritableStream<Uint8Array> | undefined,
  exited: Promise<unknown>,
): Promise<void> {
  if (!to) return;
  const writer = to.getWriter();
  if (!from) return; // TTY without stdin: keep the terminal open until the command ends
  const reader = from.getReader();
  const end = exited.then(() => ({ done: true as const, value: undefined }));
  try {
    while (true) {
      const next = await Promise.race([reader.read(), end]);
      if (next.done) break;
      await writer.write(next.value);
    }
    await writer.close();
  } catch {
    // BrokenPipe: the command exited while input was still coming.
  } finally {
    try {
      reader.releaseLock();
    } catch {
      // a read still pending on an old runtime; the caller cancels the stream
    }
    writer.releaseLock();
  }
}

/** Applies terminal sizes to the pty of `script`'s child (`sessionPid` is its ancestor). */
async function resizeLoop(
  sessionPid: number,
  sizes: AsyncIterable<TerminalSize>,
  exited: Promise<unknown>,
): Promise<void> {
  let done = false;
  exited.then(() => done = true);
  for await (const size of sizes) {
    if (done) break;
    const pts = await findPty(sessionPid);
    if (!pts) continue;
    await hostCommand("stty", {
      args: ["-F", pts, "rows", String(size.height), "cols", String(size.width)],
      stdout: "null",
      stderr: "null",
    }).output().catch(() => {});
  }
}

/**
 * The pty `script` gave its child, as a path the host can open (`/proc/<pid>/fd/0`: the pty
 * may be of the view's devpts, not found by name on the host), waiting briefly for it.
 */
async function findPty(sessionPid: number): Promise<string | undefined> {
  for (let attempt = 0; attempt < 20; attempt++) {
    // script runs below nsenter (and its fork for the PID namespace): search the whole tree.
    const tree = [sessionPid];
    for (let i = 0; i < tree.length && i < 64; i++) tree.push(...childrenOf(tree[i]));
    for (const pid of tree.slice(1)) {
      try {
        if (readProcLink(`/proc/${pid}/fd/0`).startsWith("/dev/pts/")) return `/proc/${pid}/fd/0`;
      } catch {
        // gone or not yet set up
      }
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return undefined;
}
