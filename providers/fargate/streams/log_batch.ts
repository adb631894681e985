/**
 * The node's log mirror reads its containers' CloudWatch Logs streams in batches: each round,
 * one FilterLogEvents per log group and up to 100 stream names (`logStreamNames`, the API's
 * limit), from the oldest cursor among them (`startTime`), paged with `nextToken`, and every
 * event handed to the follower of its stream. Following each stream with its own GetLogEvents
 * every second (`../logs.ts`, what `kubectl logs -f` still does) asks 200 times a second for 200
 * containers; FilterLogEvents' quota is 5 requests a second per account and Region (AWS
 * knowledge center, "How do I determine throttling in my CloudWatch logs?").
 *
 * - Each follower keeps a cursor: the last event's timestamp and the event ids given at that
 *   timestamp, so a round that asks from an older time (another stream's cursor) gives it each
 *   event once, in the stream's order (FilterLogEvents sorts by timestamp, then ingestion).
 * - Once a batch was read to its last page, its followers are asked next from no earlier than
 *   {@link LogBatchOptions.latenessMs} before the round's start or before the newest event
 *   CloudWatch gave for the group, whichever is earlier (an event stamped earlier that reaches
 *   CloudWatch later than that is not read): an idle stream does not hold every later round of
 *   its batch at its old cursor, and a vkubelet clock ahead of AWS's skips no new event.
 * - Requests go out no faster than {@link LogBatchOptions.requestsPerSecond}; a
 *   ThrottlingException holds every request back for a jittered delay that doubles while it
 *   repeats (a retry hint wins if longer) and shrinks again after successes, and the batch goes
 *   on next round from the page that was throttled (its `nextToken`): catching up a backlog
 *   between throttles does not read its first pages again and again. Another failed read is
 *   asked again next round from the same cursors, so an outage is caught up; its error is a
 *   warning the first time (per error name: AccessDeniedException names the IAM action to grant).
 * - The loop runs while someone follows and ends when the last follower's signal aborts.
 * @module
 */
import type { FilteredLogEvent } from "@aws-sdk/client-cloudwatch-logs";
import { type Clock, formatLogTime, type Logger, PolledFeeds } from "../../../provider/mod.ts";
import { awsErrorName } from "../client/aws.ts";
import { type FilterLogEventsApi, MAX_STREAM_NAMES } from "../client/log_events.ts";
import { isThrottled, retryHintMs } from "../client/throttle.ts";

/** What {@link LogBatch} needs. */
export interface LogBatchOptions {
  api: FilterLogEventsApi;
  clock: Clock;
  log: Logger;
  /** Pause between rounds, ms. */
  intervalMs: number;
  /** FilterLogEvents requests per second at most (this node's share of the account's). */
  requestsPerSecond: number;
  /** Stream names per request; default (and at most) 100. */
  namesPerRequest?: number;
  /** Events per page; default the API's (10 000). */
  pageLimit?: number;
  /** How late an event may reach CloudWatch after its timestamp and still be read; 30 s. */
  latenessMs?: number;
  /** The longest wait after throttling, ms; default 60 s. */
  maxBackoffMs?: number;
  /** Uniform in [0, 1); default Math.random. */
  random?: () => number;
}

interface Follower {
  group: string;
  stream: string;
  /** Events before it are not this follower's (its `sinceTime`). */
  sinceMs?: number;
  /** Where the next request for it starts (`startTime`); undefined: the stream's start. */
  readFromMs?: number;
  lastMs?: number;
  idsAtLast: Set<string>;
}

/** Where a throttled batch goes on next round. */
interface ResumedRead {
  startTime?: number;
  nextToken: string;
  startedMs: number;
}

/** Batched reads for many followers of CloudWatch Logs streams; see the module doc. */
export class LogBatch {
  readonly #o: LogBatchOptions;
  readonly #feeds: PolledFeeds<Follower>;
  #nextRequestMs = 0;
  #backoffLevel = 0;
  /** Throttled batches' next pages, by group and stream names. */
  readonly #resume = new Map<string, ResumedRead>();
  /** The newest event timestamp CloudWatch gave, by group: AWS's time, not vkubelet's. */
  readonly #newestMs = new Map<string, number>();
  /** Error names already logged as warnings. */
  readonly #warned = new Set<string>();
  /** FilterLogEvents requests sent, and the rounds made (for tests and the bench). */
  readonly stats = { requests: 0, rounds: 0, throttled: 0 };

  constructor(options: LogBatchOptions) {
    if (!(options.requestsPerSecond > 0)) throw new RangeError("requestsPerSecond must be > 0");
    this.#o = options;
    this.#feeds = new PolledFeeds({ poll: (signal) => this.#run(signal) });
  }

  /**
   * The stream's events from `sinceMs` on, each line `<RFC 3339 time> <message>\n`, open until
   * `signal` aborts or the reader cancels.
   */
  follow(
    group: string,
    stream: string,
    options: { sinceMs?: number; signal: AbortSignal },
  ): ReadableStream<Uint8Array> {
    const { sinceMs, signal } = options;
    const f: Follower = { group, stream, sinceMs, readFromMs: sinceMs, idsAtLast: new Set() };
    return this.#feeds.join(f, signal);
  }

  /** Settles once no one follows and the loop has ended. */
  idle(): Promise<void> {
    return this.#feeds.idle();
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.#round(signal);
      this.stats.rounds++;
      await this.#o.clock.sleep(this.#o.intervalMs, signal).catch(() => {});
    }
  }

  /** One round: every group's followed streams, in batches of up to 100 names. */
  async #round(signal: AbortSignal): Promise<void> {
    const groups = new Map<string, Map<string, Follower[]>>();
    for (const f of this.#feeds.members) {
      const streams = groups.get(f.group) ?? new Map<string, Follower[]>();
      groups.set(f.group, streams.set(f.stream, [...streams.get(f.stream) ?? [], f]));
    }
    const per = Math.min(this.#o.namesPerRequest ?? MAX_STREAM_NAMES, MAX_STREAM_NAMES);
    const keys = new Set<string>();
    for (const [group, streams] of groups) {
      const names = [...streams.keys()].sort();
      for (let i = 0; i < names.length && !signal.aborted; i += per) {
        const batch = new Map(names.slice(i, i + per).map((n) => [n, streams.get(n)!]));
        keys.add(batchKey(group, batch));
        await this.#readBatch(group, batch, signal);
      }
    }
    // A batch whose followers changed starts again from their cursors.
    for (const key of this.#resume.keys()) if (!keys.has(key)) this.#resume.delete(key);
  }

  /** One batch read to its last page; false if a request failed (asked again next round). */
  async #readBatch(
    group: string,
    streams: Map<string, Follower[]>,
    signal: AbortSignal,
  ): Promise<boolean> {
    const key = batchKey(group, streams);
    const resumed = this.#resume.get(key);
    this.#resume.delete(key);
    const startedMs = resumed?.startedMs ?? this.#o.clock.now();
    const followers = [...streams.values()].flat();
    const starts = followers.map((f) => f.readFromMs);
    const startTime = resumed
      ? resumed.startTime
      : starts.includes(undefined)
      ? undefined
      : Math.min(...(starts as number[]));
    let nextToken = resumed?.nextToken;
    do {
      try {
        await this.#turn(signal);
        this.stats.requests++;
        const page = await this.#o.api.filterLogEvents({
          logGroupName: group,
          logStreamNames: [...streams.keys()],
          startTime,
          nextToken,
          limit: this.#o.pageLimit,
        }, signal);
        this.#backoffLevel = Math.max(0, this.#backoffLevel - 1);
        for (const event of page.events ?? []) {
          for (const f of streams.get(event.logStreamName ?? "") ?? []) {
            const line = offer(f, event);
            if (line !== undefined) this.#feeds.push(f, line);
          }
          const ms = event.timestamp ?? -Infinity;
          if (ms > (this.#newestMs.get(group) ?? -Infinity)) this.#newestMs.set(group, ms);
        }
        nextToken = page.nextToken;
      } catch (err) {
        if (signal.aborted) return false;
        // No group (or stream) yet: nothing written so far.
        if (awsErrorName(err) === "ResourceNotFoundException") return false;
        if (isThrottled(err)) {
          this.#backOff(retryHintMs(err));
          // The pages before were delivered: go on from this one.
          if (nextToken) this.#resume.set(key, { startTime, nextToken, startedMs });
        } else this.#reportFailure(group, err);
        return false;
      }
    } while (nextToken);
    // Events seen give AWS's time: vkubelet's clock ahead of it must not pass new events by.
    const newest = this.#newestMs.get(group) ?? -Infinity;
    const floor = Math.min(startedMs, newest) - (this.#o.latenessMs ?? 30_000);
    for (const f of followers) {
      const from = Math.max(f.readFromMs ?? -Infinity, f.lastMs ?? -Infinity, floor);
      // Nothing seen yet and no cut-off: still from the stream's start (no startTime is sent).
      f.readFromMs = Number.isFinite(from) ? from : undefined;
    }
    return true;
  }

  /** A failed read: a warning the first time for each error name, later at debug. */
  #reportFailure(group: string, err: unknown): void {
    const name = awsErrorName(err) ?? (err instanceof Error ? err.name : "Error");
    if (this.#warned.has(name)) {
      this.#o.log.debug("reading log group {group} for the log mirror failed: {err}", {
        group,
        err,
      });
      return;
    }
    this.#warned.add(name);
    const fix = name === "AccessDeniedException"
      ? "grant vkubelet's IAM identity logs:FilterLogEvents on the log group, or set logMirror: " +
        "follow (GetLogEvents per container)"
      : "it is asked again every round";
    this.#o.log.warning(
      "The log mirror could not read log group {group} with FilterLogEvents, so it writes no " +
        "lines of its containers ({name}: {err}); {fix}. Further {name} errors are logged at debug",
      { group, name, err, fix },
    );
  }

  /** Waits for the request budget's next slot. */
  async #turn(signal: AbortSignal): Promise<void> {
    const now = this.#o.clock.now();
    const at = Math.max(now, this.#nextRequestMs);
    this.#nextRequestMs = at + 1000 / this.#o.requestsPerSecond;
    if (at > now) await this.#o.clock.sleep(at - now, signal);
  }

  /** Holds every request back: half to all of interval × 2^level, capped, or the hint. */
  #backOff(hintMs: number | undefined): void {
    this.stats.throttled++;
    const cap = this.#o.maxBackoffMs ?? 60_000;
    const ceiling = Math.min(cap, this.#o.intervalMs * 2 ** ++this.#backoffLevel);
    const delay = Math.max(
      hintMs ?? 0,
      ceiling / 2 + (this.#o.random ?? Math.random)() * ceiling / 2,
    );
    this.#nextRequestMs = Math.max(this.#nextRequestMs, this.#o.clock.now() + delay);
    this.#o.log.debug("the log mirror's FilterLogEvents was throttled; waiting {ms} ms", {
      ms: Math.round(delay),
    });
  }
}

function batchKey(group: string, streams: Map<string, unknown>): string {
  return [group, ...streams.keys()].join("\n");
}

/** `event`'s line for `f`, unless it is before its start or was given already. */
function offer(f: Follower, event: FilteredLogEvent): string | undefined {
  const ms = event.timestamp ?? 0;
  const id = event.eventId ?? `${ms}/${event.message}`;
  if (f.lastMs === undefined ? ms < (f.sinceMs ?? -Infinity) : ms < f.lastMs) return undefined;
  if (ms === f.lastMs) {
    if (f.idsAtLast.has(id)) return undefined;
    f.idsAtLast.add(id);
  } else {
    f.lastMs = ms;
    f.idsAtLast = new Set([id]);
  }
  const message = event.message ?? "";
  return `${formatLogTime(ms)} ${message.endsWith("\n") ? message : `${message}\n`}`;
}
