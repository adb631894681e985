/**
 * `kubectl exec` in a plain Zun container through Zun's execute API:
 * `POST /v1/containers/<uuid>/execute?run=true&interactive=false&command=…`
 * (zun/api/controllers/v1/containers.py `execute`; zun-compute runs it to its end,
 * zun/container/docker/driver.py `execute_run`, and answers `{"output", "exit_code"}`).
 *
 * What that API cannot carry is refused, saying why: stdin and a terminal (`-i`, `-t`) need
 * Zun's interactive exec, which hands out a websocket of its proxy (zun-wsproxy) to the
 * engine's remote API — a second service and an engine listening on TCP that a deployment may
 * not run, and that the test stack does not. The output arrives at the end, stdout and stderr
 * merged (the engine's exec is started without demultiplexing), all on stdout; zun-compute
 * stops waiting after `[docker] execute_timeout` (5 s by default) and Zun answers 409.
 * @module
 */
import {
  type ExecOptions,
  InvalidInputError,
  NotSupportedError,
  TransientError,
} from "../../../provider/mod.ts";
import { type ZunApi, ZunApiError } from "../client/zun_api.ts";

/** Why `-i`/`-t` are refused. */
export const NO_INTERACTIVE_EXEC =
  "Zun runs a command to its end and answers with its output; stdin and a terminal need its interactive exec over the websocket proxy (zun-wsproxy), which this provider does not speak: run the command without -i and -t";

/**
 * argv as one string that the engine's client splits back into the same argv (docker-py's
 * `split_command`, Python's `shlex.split`): each word in single quotes.
 */
export function shellJoin(argv: string[]): string {
  return argv.map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(" ");
}

/** Runs `options.command` in the container `uuid`; resolves with its exit code. */
export async function zunExec(api: ZunApi, uuid: string, options: ExecOptions): Promise<number> {
  const { io, command, signal } = options;
  if (io.stdin || io.tty) throw new NotSupportedError(`exec with -i or -t: ${NO_INTERACTIVE_EXEC}`);
  const query = new URLSearchParams({
    run: "true",
    interactive: "false",
    command: shellJoin(command),
  });
  let answer;
  try {
    answer = await api.call<{ output?: string | null; exit_code?: number | null }>(
      "POST",
      `/containers/${uuid}/execute?${query}`,
      { signal },
    );
  } catch (err) {
    if (err instanceof ZunApiError && err.status === 409) {
      throw new TransientError(
        `exec in Zun container ${uuid} failed: ${err.message} (zun-compute waits [docker] execute_timeout, 5 s by default, for a command to end)`,
        { cause: err },
      );
    }
    if (err instanceof ZunApiError && err.status === 400) {
      throw new InvalidInputError(`Zun refused the exec: ${err.message}`, { cause: err });
    }
    throw err;
  }
  const { output, exit_code: exitCode } = answer.body ?? {};
  if (output && io.stdout) {
    const writer = io.stdout.getWriter();
    try {
      await writer.write(new TextEncoder().encode(output));
    } finally {
      writer.releaseLock();
    }
  }
  if (typeof exitCode !== "number") {
    throw new TransientError(`Zun ran the exec in container ${uuid} but gave no exit code`);
  }
  return exitCode;
}
