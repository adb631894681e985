/**
 * `kubectl logs` from CloudWatch Logs: the awslogs driver writes each container's output to the
 * stream `vk/<container>/<task id>` of the configured group; this reads it with GetLogEvents
 * (tail, since, timestamps, limitBytes) and follows it by polling the forward token.
 * @module
 */
import {
  type CloudWatchLogsClient,
  GetLogEventsCommand,
  type GetLogEventsCommandOutput,
  type OutputLogEvent,
} from "@aws-sdk/client-cloudwatch-logs";
import {
  type Clock,
  type ContainerLogOptions,
  formatLogTime,
  linesToStream,
} from "../../provider/mod.ts";
import { awsError, awsErrorName } from "./client/aws.ts";

/** Where a container's log is and how to poll it. */
export interface LogSource {
  logs: CloudWatchLogsClient;
  group: string;
  stream: string;
  clock: Clock;
  /** How often `follow` asks for new events. */
  pollMs?: number;
}

/** The container's log as bytes; with `follow`, open until `options.signal` aborts. */
export function readContainerLog(
  source: LogSource,
  options: ContainerLogOptions,
): ReadableStream<Uint8Array> {
  return linesToStream(logLines(source, options), options.limitBytes);
}

async function* logLines(
  source: LogSource,
  options: ContainerLogOptions,
): AsyncGenerator<string> {
  const signal = options.signal;
  const since = options.sinceTime?.getTime() ??
    (options.sinceSeconds === undefined
      ? undefined
      : source.clock.now() - options.sinceSeconds * 1000);
  const line = (e: OutputLogEvent) => {
    const text = (e.message ?? "").endsWith("\n") ? e.message! : `${e.message ?? ""}\n`;
    return options.timestamps ? `${formatLogTime(e.timestamp ?? 0)} ${text}` : text;
  };
  let token: string | undefined;
  if (options.tailLines !== undefined) {
    const page = await getEvents(source, {
      startFromHead: false,
      limit: Math.max(1, Math.min(options.tailLines, 10_000)),
      startTime: since,
    }, signal);
    const events = options.tailLines === 0 ? [] : (page?.events ?? []);
    for (const e of events.slice(-options.tailLines)) yield line(e);
    token = page?.nextForwardToken;
  }
  for (;;) {
    const page = await getEvents(source, {
      startFromHead: true,
      // The same window on every page: a forward token is a position within the events the
      // filter selects (moto's is an index into that list), so a page asked without the filter
      // starts from the wrong place and replays lines.
      startTime: since,
      nextToken: token,
    }, signal);
    for (const e of page?.events ?? []) yield line(e);
    const next = page?.nextForwardToken;
    const atEnd = !page?.events?.length || next === token;
    if (next) token = next;
    if (!atEnd) continue;
    if (!options.follow || signal?.aborted) return;
    try {
      await source.clock.sleep(source.pollMs ?? 1000, signal);
    } catch {
      return; // the client went away
    }
  }
}

async function getEvents(
  source: LogSource,
  input: { startFromHead: boolean; limit?: number; startTime?: number; nextToken?: string },
  signal: AbortSignal | undefined,
): Promise<GetLogEventsCommandOutput | undefined> {
  try {
    return await source.logs.send(
      new GetLogEventsCommand({
        logGroupName: source.group,
        logStreamName: source.stream,
        ...input,
      }),
      { abortSignal: signal },
    );
  } catch (err) {
    // No stream yet: the container has not written anything.
    if (awsErrorName(err) === "ResourceNotFoundException") return undefined;
    if (signal?.aborted) return undefined;
    throw awsError(`reading log stream ${source.stream}`, err);
  }
}
