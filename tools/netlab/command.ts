/**
 * One-shot commands for the network lab: {@link run} for steps that must work (throws with the
 * command and its stderr), {@link tryRun} for checks (never throws on a non-zero exit).
 * @module
 */

/** What a command gave back. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `argv` (with `stdin` when given); its exit code and trimmed output. */
export async function tryRun(
  argv: string[],
  options: { stdin?: string; signal?: AbortSignal } = {},
): Promise<RunResult> {
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal: options.signal,
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout).trim(),
    stderr: decoder.decode(out.stderr).trim(),
  };
}

/** Runs `argv`; its trimmed stdout, or an error naming the command and its stderr. */
export async function run(argv: string[], stdin?: string): Promise<string> {
  const out = await tryRun(argv, { stdin });
  if (out.code !== 0) {
    throw new Error(`${argv.join(" ")} failed (exit ${out.code}): ${out.stderr || out.stdout}`);
  }
  return out.stdout;
}

/** Calls `check` every `everyMs` until it returns a value other than undefined or false. */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; everyMs?: number; detail?: () => Promise<string> } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      const detail = options.detail ? `\n${await options.detail()}` : "";
      throw new Error(`${what}: not within ${(options.timeoutMs ?? 60_000) / 1000} s${detail}`);
    }
    await new Promise((r) => setTimeout(r, options.everyMs ?? 250));
  }
}
