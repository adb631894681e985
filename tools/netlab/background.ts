/**
 * Long-running processes of the network lab (relays, flanneld, kube-proxy, CoreDNS, vkubelet),
 * each started in a given network namespace with its output in a log file, and stopped by its
 * own pid: `ip netns exec` execs the command, so the child's pid is the command's.
 * @module
 */

/** A process the lab started. */
export interface Background {
  name: string;
  pid: number;
  log: string;
  /** The end of its log, for error messages. */
  tail(lines?: number): Promise<string>;
  /** True once it has exited. */
  exited(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Options for {@link startBackground}. */
export interface BackgroundOptions {
  /** The network namespace (`ip netns` name); the root namespace when absent. */
  netns?: string;
  env?: Record<string, string>;
  /** The log file; its output is appended. */
  log: string;
}

/** Starts `command args…` detached from the caller's terminal, its output in `options.log`. */
export async function startBackground(
  name: string,
  command: string[],
  options: BackgroundOptions,
): Promise<Background> {
  await Deno.writeTextFile(options.log, "", { append: true });
  const argv = options.netns ? ["ip", "netns", "exec", options.netns, ...command] : command;
  // The output goes to the file by the shell's redirection, not through pipes to this process:
  // a pipe stays open while anything the command started holds it (vkubelet's pods do).
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec "$0" "$@" >>"$NETLAB_LOG" 2>&1', ...argv],
    env: { ...options.env, NETLAB_LOG: options.log },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let done = false;
  const status = child.status.then((s) => {
    done = true;
    return s;
  });
  return {
    name,
    pid: child.pid,
    log: options.log,
    async tail(lines = 20) {
      const text = await Deno.readTextFile(options.log).catch(() => "");
      return text.split("\n").slice(-lines).join("\n");
    },
    exited: () => done,
    async stop(graceMs = 5_000) {
      if (done) return;
      for (const signal of ["SIGTERM", "SIGKILL"] as const) {
        try {
          child.kill(signal);
        } catch {
          // Already gone.
        }
        let timer: ReturnType<typeof setTimeout> | undefined;
        const grace = new Promise((r) => timer = setTimeout(r, graceMs));
        await Promise.race([status, grace]);
        clearTimeout(timer);
        if (done) return;
      }
      await status;
    },
  };
}
