/**
 * `kubectl logs` from `Containers_ListLogs`, which returns a container's current log (up to
 * 4 MB, optionally only the last `tail` lines, optionally each line prefixed with its time).
 * The log is always asked for with times, so that `sinceSeconds`/`sinceTime` filter here;
 * they are stripped again unless `timestamps` was asked for. `follow` polls and sends the lines
 * past those already sent (a restarted container's log starts again from its top). ACI keeps no
 * log of a previous container run, so `previous` is refused.
 * @module
 */
import {
  type Clock,
  type ContainerLogOptions,
  linesToStream,
  NotSupportedError,
} from "../../../provider/mod.ts";
import type { AciGroups } from "../client/groups.ts";

/** Where a container's log is and how to poll it. */
export interface LogSource {
  groups: Pick<AciGroups, "logs">;
  group: string;
  container: string;
  clock: Clock;
  /** How often `follow` asks again. */
  pollMs: number;
}

/** A log line split into its time (ms, if it had one) and the line with its time. */
function parse(line: string): { ms?: number; stamped: string; text: string } {
  const space = line.indexOf(" ");
  const ms = space > 0 ? Date.parse(line.slice(0, space)) : NaN;
  if (Number.isNaN(ms)) return { stamped: line, text: line };
  return { ms, stamped: line, text: line.slice(space + 1) };
}

/** The container's log as bytes; with `follow`, open until `options.signal` aborts. */
export function readContainerLog(
  source: LogSource,
  options: ContainerLogOptions,
): ReadableStream<Uint8Array> {
  if (options.previous) {
    throw new NotSupportedError(
      "ACI keeps no log of a container's previous run; drop --previous (the current run's log is there)",
    );
  }
  return linesToStream(logLines(source, options), options.limitBytes);
}

async function* logLines(source: LogSource, options: ContainerLogOptions) {
  const { signal } = options;
  const since = options.sinceTime?.getTime() ??
    (options.sinceSeconds === undefined
      ? undefined
      : source.clock.now() - options.sinceSeconds * 1000);
  const fetchLines = async (tail?: number) => {
    const text = await source.groups.logs(source.group, source.container, {
      tail,
      timestamps: true,
      signal,
    });
    return text.split("\n").filter((l, i, all) => l !== "" || i < all.length - 1).map(parse);
  };
  const show = (l: ReturnType<typeof parse>) => `${options.timestamps ? l.stamped : l.text}\n`;
  const wanted = (l: ReturnType<typeof parse>) =>
    since === undefined || l.ms === undefined || l.ms >= since;
  let all = await fetchLines(options.follow ? undefined : options.tailLines);
  let sent = all.length;
  const first = all.filter(wanted);
  const tail = options.tailLines === undefined ? first : first.slice(
    Math.max(0, first.length - options.tailLines),
  );
  for (const l of options.tailLines === 0 ? [] : tail) yield show(l);
  while (options.follow && !signal?.aborted) {
    try {
      await source.clock.sleep(source.pollMs, signal);
    } catch {
      return; // the client went away
    }
    all = await fetchLines();
    if (all.length < sent) sent = 0; // a new run of the container: its log starts again
    for (const l of all.slice(sent)) if (wanted(l)) yield show(l);
    sent = all.length;
  }
}
