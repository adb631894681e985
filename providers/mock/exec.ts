/**
 * `kubectl exec` and `attach` for the mock: a handful of commands answered deterministically,
 * enough to test the streaming paths end to end. Commands: `echo [-n] ...`, `cat` (stdin to
 * stdout), `exit N`, `true`, `false`, `env`, `printenv [NAME]`, `hostname`, `pwd`, `whoami`,
 * `sleep SECONDS` (on the injected clock), and `sh -c "..."` running one of those. Anything else
 * prints "command not found" to stderr and exits 127, as a shell does.
 * @module
 */
import type { Container, Pod } from "kubernetes-types/core/v1.d.ts";
import type { AttachOptions, Clock, ContainerRef, ExecOptions } from "../../provider/mod.ts";

/** What a command can see of its container. */
export interface ExecContext {
  pod: Pod;
  container: Container;
  clock: Clock;
}

const encoder = new TextEncoder();

async function write(stream: WritableStream<Uint8Array> | undefined, text: string) {
  if (!stream || text === "") return;
  const writer = stream.getWriter();
  try {
    await writer.write(encoder.encode(text));
  } finally {
    writer.releaseLock();
  }
}

/** Copies `stdin` to `stdout` until stdin ends or `signal` aborts. */
async function echoStdin(options: ExecOptions | AttachOptions, signal: AbortSignal) {
  const { stdin, stdout } = options.io;
  if (!stdin) return;
  const reader = stdin.getReader();
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => {});
  try {
    while (true) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) return;
      if (stdout) {
        const writer = stdout.getWriter();
        await writer.write(value).finally(() => writer.releaseLock());
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/** The container's environment as `env` prints it: PATH and HOSTNAME, then its own `env`. */
function environment(context: ExecContext): [string, string][] {
  const own = (context.container.env ?? []).map((e): [string, string] => [e.name, e.value ?? ""]);
  return [
    ["PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    ["HOSTNAME", context.pod.metadata?.name ?? ""],
    ...own,
  ];
}

/** Splits `sh -c` script text into words, honouring simple single and double quotes. */
function words(script: string): string[] {
  return [...script.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}

/** Runs `options.command` in the mock container and resolves with its exit code. */
export async function runMockCommand(
  options: ExecOptions & { signal: AbortSignal },
  context: ExecContext,
): Promise<number> {
  let [program, ...args] = options.command;
  if (["sh", "bash", "ash"].includes(program) && args[0] === "-c" && args[1] !== undefined) {
    [program, ...args] = words(args[1]);
  }
  const out = options.io.stdout;
  const err = options.io.tty ? out : options.io.stderr;
  switch (program) {
    case "echo": {
      const noNewline = args[0] === "-n";
      await write(out, (noNewline ? args.slice(1) : args).join(" ") + (noNewline ? "" : "\n"));
      return 0;
    }
    case "cat":
      await echoStdin(options, options.signal);
      return 0;
    case "exit": {
      const code = Number(args[0] ?? 0);
      return Number.isInteger(code) ? ((code % 256) + 256) % 256 : 2;
    }
    case "true":
      return 0;
    case "false":
      return 1;
    case "env":
      await write(out, environment(context).map(([k, v]) => `${k}=${v}\n`).join(""));
      return 0;
    case "printenv": {
      const env = environment(context);
      const chosen = args.length ? env.filter(([k]) => args.includes(k)) : env;
      await write(out, chosen.map(([k, v]) => args.length ? `${v}\n` : `${k}=${v}\n`).join(""));
      return chosen.length > 0 || args.length === 0 ? 0 : 1;
    }
    case "hostname":
      await write(out, `${context.pod.metadata?.name}\n`);
      return 0;
    case "pwd":
      await write(out, "/\n");
      return 0;
    case "whoami":
      await write(out, "root\n");
      return 0;
    case "sleep": {
      const seconds = Number(args[0]);
      if (!(seconds >= 0)) {
        await write(err, `sleep: invalid time interval '${args[0] ?? ""}'\n`);
        return 1;
      }
      await context.clock.sleep(seconds * 1000, options.signal);
      return 0;
    }
    default:
      await write(err, `mock: ${program}: command not found\n`);
      return 127;
  }
}

/** Attach: a greeting on stdout, then stdin echoed back until it ends or `signal` aborts. */
export async function attachMock(
  options: AttachOptions & { signal: AbortSignal },
  ref: ContainerRef,
): Promise<void> {
  await write(options.io.stdout, `mock: attached to container ${ref.container}\n`);
  if (options.io.stdin) return await echoStdin(options, options.signal);
  // Without stdin, an attach session streams output until the client or the pod goes away.
  await new Promise<void>((resolve) => {
    if (options.signal.aborted) return resolve();
    options.signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
