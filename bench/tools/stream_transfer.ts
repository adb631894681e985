/**
 * Byte movers for the streaming bench, each timed the same way through kubectl and on the
 * direct path: an echo of N bytes over one TCP connection, N bytes from a file through a
 * process's stdin to its stdout (`cat` or `kubectl exec -i … cat`), `kubectl port-forward`
 * held open around a transfer, and the CPU seconds of this process and its children.
 * @module
 */

/** The value at quantile `q` (0..1) of `samples` (nearest rank, low side). */
export function quantile(samples: number[], q: number): number {
  if (samples.length === 0) throw new RangeError("quantile of no samples: measure at least once");
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Megabytes (10^6 bytes) per second. */
export function mbPerSecond(bytes: number, ms: number): number {
  return bytes / 1e6 / (ms / 1000);
}

/**
 * Sends `bytes` to 127.0.0.1:`port` and reads the echo back, 256 KiB at a time, both ways at
 * once; throws unless exactly `bytes` come back. Resolves with the milliseconds it took.
 */
export async function echo(port: number, bytes: number, signal?: AbortSignal): Promise<number> {
  const started = performance.now();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const close = () => {
    try {
      conn.close();
    } catch {
      // closed already
    }
  };
  signal?.addEventListener("abort", close, { once: true });
  try {
    const chunk = new Uint8Array(256 * 1024).fill(7);
    const writing = (async () => {
      for (let sent = 0; sent < bytes;) {
        const piece = chunk.subarray(0, Math.min(chunk.length, bytes - sent));
        for (let at = 0; at < piece.length;) at += await conn.write(piece.subarray(at));
        sent += piece.length;
      }
      await conn.closeWrite();
    })();
    let received = 0;
    for await (const part of conn.readable) received += part.length;
    await writing;
    if (received !== bytes) throw new Error(`echoed ${received} of ${bytes} bytes`);
    return performance.now() - started;
  } finally {
    signal?.removeEventListener("abort", close);
    close();
  }
}

/** What {@link pipeFile} measured. */
export interface PipeResult {
  ms: number;
  /** Bytes that came out on stdout. */
  bytes: number;
  code: number;
  stderr: string;
}

/**
 * Runs argv with `file` on stdin, counting (not keeping) what comes out on stdout; the time
 * runs from the spawn to the process's exit.
 */
export async function pipeFile(
  argv: string[],
  file: string,
  signal?: AbortSignal,
): Promise<PipeResult> {
  const started = performance.now();
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    signal,
  }).spawn();
  const input = await Deno.open(file);
  const [, bytes, stderr, status] = await Promise.all([
    input.readable.pipeTo(child.stdin).catch(() => {}),
    (async () => {
      let n = 0;
      for await (const part of child.stdout) n += part.length;
      return n;
    })(),
    new Response(child.stderr).text(),
    child.status,
  ]);
  return { ms: performance.now() - started, bytes, code: status.code, stderr };
}

/**
 * Starts `kubectl port-forward pod/NAME :REMOTE` (argv is kubectl and its global flags), waits
 * for its local port, runs `use(localPort)` and stops it.
 */
export async function withPortForward<T>(
  kubectl: string[],
  pod: { namespace: string; podName: string },
  remotePort: number,
  use: (localPort: number) => Promise<T>,
): Promise<T> {
  const child = new Deno.Command(kubectl[0], {
    args: [
      ...kubectl.slice(1),
      "-n",
      pod.namespace,
      "port-forward",
      "--address=127.0.0.1",
      `pod/${pod.podName}`,
      `:${remotePort}`,
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let seen = "", port = 0;
    const deadline = AbortSignal.timeout(30_000);
    while (!port) {
      const { value, done } = await Promise.race([
        reader.read(),
        new Promise<never>((_, reject) =>
          deadline.addEventListener("abort", () => reject(deadline.reason), { once: true })
        ),
      ]);
      if (done) throw new Error(`kubectl port-forward ended before forwarding: ${seen}`);
      seen += value;
      port = Number(/127\.0\.0\.1:(\d+)/.exec(seen)?.[1] ?? 0);
    }
    return await use(port);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await reader.cancel().catch(() => {});
  }
}

function statFields(pid: number | "self"): number[] {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  // Fields after the command name, which may hold spaces, start after the last ")".
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
}

/** CPU seconds of a process (utime + stime) and of its children it has waited for. */
export function cpuOf(pid: number | "self"): { own: number; children: number } {
  const f = statFields(pid);
  // utime, stime, cutime, cstime are fields 14-17 of the line, 12-15 after the name; USER_HZ 100.
  return { own: (f[11] + f[12]) / 100, children: (f[13] + f[14]) / 100 };
}

/**
 * CPU seconds of a process and every descendant, live or waited for (a pod's runner and the
 * server under it; vkubelet and the `cat` it runs for an exec), leaving out the subtrees of
 * `exclude` (a pod whose runner is vkubelet's child, counted on its own).
 */
export function cpuOfTree(root: number, exclude: readonly number[] = []): number {
  const parent = new Map<number, number[]>();
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid)) continue;
    try {
      const ppid = statFields(pid)[1];
      parent.set(ppid, [...(parent.get(ppid) ?? []), pid]);
    } catch {
      // exited meanwhile
    }
  }
  let sum = 0;
  const visit = (pid: number) => {
    try {
      const { own, children } = cpuOf(pid);
      sum += own + children;
    } catch {
      return; // exited meanwhile
    }
    for (const child of parent.get(pid) ?? []) if (!exclude.includes(child)) visit(child);
  };
  visit(root);
  return sum;
}

/** Writes `bytes` of random data to a new temporary file; returns its path. */
export async function randomFile(bytes: number): Promise<string> {
  const file = await Deno.makeTempFile({ prefix: "vkbench-stream-" });
  const out = await Deno.open(file, { write: true });
  try {
    const block = new Uint8Array(1 << 20);
    for (let written = 0; written < bytes;) {
      const piece = block.subarray(0, Math.min(block.length, bytes - written));
      for (let at = 0; at < piece.length; at += 65536) {
        crypto.getRandomValues(piece.subarray(at, Math.min(piece.length, at + 65536)));
      }
      for (let at = 0; at < piece.length;) at += await out.write(piece.subarray(at));
      written += piece.length;
    }
  } finally {
    out.close();
  }
  return file;
}
