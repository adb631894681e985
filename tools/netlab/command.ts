/**
 * One-shot commands for the network lab: {@link run} for steps that must work (throws with the
 * command and its stderr), {@link tryRun} for checks (never throws on a non-zero exit).
 * @module
 */
import { type CommandResult, runCommand } from "../cluster/cluster.ts";

/** What a command gave back. */
export type RunResult = CommandResult;

/** Runs `argv` (with `stdin` when given); its exit code and trimmed output. */
export async function tryRun(
  argv: string[],
  options: { stdin?: string; signal?: AbortSignal } = {},
): Promise<RunResult> {
  const out = await runCommand(argv[0], argv.slice(1), options);
  return { code: out.code, stdout: out.stdout.trim(), stderr: out.stderr.trim() };
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
