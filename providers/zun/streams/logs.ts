/**
 * `kubectl logs` of a plain Zun container, from `GET /v1/containers/<uuid>/logs`
 * (zun/api/controllers/v1/containers.py `logs`: `stdout`, `stderr`, `timestamps`, `tail`,
 * `since` as epoch seconds; the answer is one JSON string, stdout and stderr merged). What Zun
 * serves is used: `tail` for `--tail`, `since` for `--since`/`--since-time` (then cut to the
 * millisecond here, by each line's time), `timestamps` always (the lines' times say what
 * `--since` and `--follow` keep; they are shown only with `--timestamps`, as the kubelet writes
 * them). Zun has no follow: `-f` asks again every `pollMs` for the lines since the last one seen
 * (lines of that same second already sent are skipped by count) and ends once the container
 * has stopped and its last lines are sent. `--limit-bytes` cuts the stream.
 * @module
 */
import {
  type ContainerLogOptions,
  formatLogTime,
  InvalidInputError,
  linesToStream,
} from "../../../provider/mod.ts";
import type { ZunPlainContainer } from "../status.ts";
import { type ZunApi, ZunApiError } from "../client/zun_api.ts";

/** One log line: its time (epoch ms) and text (with its newline). */
interface LogLine {
  ms: number;
  text: string;
}

/** Lines as Zun sends them with timestamps: `2026-12-07T17:16:30.123456789Z text`. */
export function parseLogLines(body: string): LogLine[] {
  const lines = body.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.map((line) => {
    const space = line.indexOf(" ");
    const stamp = space > 0 ? line.slice(0, space) : line;
    // Date.parse takes milliseconds at most: the fraction is cut to three digits.
    const ms = Date.parse(stamp.replace(/\.(\d{1,3})\d*/, ".$1"));
    return Number.isNaN(ms)
      ? { ms: 0, text: `${line}\n` }
      : { ms, text: `${space > 0 ? line.slice(space + 1) : ""}\n` };
  });
}

/** What {@link zunLogs} needs. */
export interface ZunLogsOptions {
  api: ZunApi;
  /** Now, epoch ms (`--since`). */
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Between reads while following, ms (default 1000). */
  pollMs?: number;
}

/**
 * The container's log as the core serves it; see the module doc. The first lines are read
 * before the stream is answered, so that Zun's refusal (a container still being made: 409) is
 * the call's error, not a stream cut short.
 */
export async function zunLogs(
  uuid: string,
  options: ContainerLogOptions,
  deps: ZunLogsOptions,
): Promise<ReadableStream<Uint8Array>> {
  const sinceMs = options.sinceTime?.getTime() ??
    (options.sinceSeconds !== undefined ? deps.now() - options.sinceSeconds * 1000 : undefined);
  const read = async (since: number | undefined, tail?: number) => {
    const query = new URLSearchParams({ stdout: "true", stderr: "true", timestamps: "true" });
    if (tail !== undefined) query.set("tail", String(tail));
    if (since !== undefined) query.set("since", String(Math.floor(since / 1000)));
    const { body } = await deps.api.call<string>(
      "GET",
      `/containers/${uuid}/logs?${query}`,
      { signal: options.signal },
    ).catch((err) => {
      if (!(err instanceof ZunApiError && err.status === 409)) throw err;
      throw new InvalidInputError(`the container has no log yet: ${err.message}`, { cause: err });
    });
    return parseLogLines(body ?? "").filter((l) => since === undefined || l.ms >= since);
  };
  // The newest time sent, and how many lines of that time were sent.
  let last = sinceMs ?? 0;
  let atLast = 0;
  function* fresh(batch: LogLine[]): Generator<string> {
    let skip = atLast;
    for (const line of batch) {
      if (line.ms < last || (line.ms === last && skip-- > 0)) continue;
      atLast = line.ms === last ? atLast + 1 : 1;
      last = line.ms;
      yield options.timestamps ? `${formatLogTime(line.ms)} ${line.text}` : line.text;
    }
  }
  const first = await read(sinceMs, options.tailLines);
  async function* lines(): AsyncGenerator<string> {
    yield* fresh(first);
    while (options.follow && !options.signal?.aborted) {
      const stopped = await ended(deps.api, uuid, options.signal);
      await deps.sleep(deps.pollMs ?? 1000, options.signal).catch(() => {});
      if (options.signal?.aborted) return;
      yield* fresh(await read(last));
      if (stopped) return;
    }
  }
  return linesToStream(lines(), options.limitBytes);
}

/** The container has stopped (or is gone): no line comes after what Zun has now. */
async function ended(api: ZunApi, uuid: string, signal?: AbortSignal): Promise<boolean> {
  try {
    const { body } = await api.call<ZunPlainContainer>("GET", `/containers/${uuid}`, { signal });
    return ["Stopped", "Error", "Dead"].includes(body.status);
  } catch {
    return true;
  }
}
