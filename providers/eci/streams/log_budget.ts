/**
 * The node's log mirror polls its ECI containers under one budget: ECI has no call that reads
 * many containers' logs, and DescribeContainerLog allows 500 calls a minute per account (Alibaba
 * Cloud, "Elastic Container Instance limits", API limits), so following each container by
 * itself every 2 s (`./logs.ts`, what `kubectl logs -f` still does) spends that on 17
 * containers. Here one scheduler per node calls DescribeContainerLog for the followed containers
 * in turn (round-robin), no faster than {@link LogBudgetOptions.requestsPerSecond} and no
 * container more often than {@link LogBudgetOptions.intervalMs}; each poll asks from the
 * container's last line (its {@link LogCursor}), so a container waits longer between polls as the
 * node follows more. One answer holds at most the newest {@link MAX_TAIL} lines (`Tail`; ECI's
 * default is 500) and 1 MB ({@link MAX_LOG_BYTES}): tools/harness/eci/metadata/current/
 * DescribeContainerLog.json, "Default value: 500. Maximum value: 2000. A maximum of 1 MB log data
 * can be returned". An answer at that cap may have skipped older lines: the container is polled
 * again at the budget's next slot, ahead of the others (once; then it takes its turn again), and
 * if the answer's first line is newer than where the poll started, the skipped time range is
 * logged as a warning: those lines are not in the node's log (`kubectl logs` still reads them from
 * ECI). A throttled answer (`Throttling.*`) holds every poll back for a delay that doubles while
 * it repeats; a failed poll is asked again on the container's next turn. The loop runs while
 * someone follows.
 * @module
 */
import { type Clock, type Logger, PolledFeeds } from "../../../provider/mod.ts";
import type { EciApi } from "../client/api.ts";
import { isThrottling } from "../client/retry.ts";
import { firstStamp, LogCursor, MAX_LOG_BYTES, MAX_TAIL } from "./logs.ts";

/** What {@link LogBudget} needs. */
export interface LogBudgetOptions {
  api: Pick<EciApi, "log">;
  clock: Clock;
  log: Logger;
  /** DescribeContainerLog calls per second at most, for the whole node. */
  requestsPerSecond: number;
  /** The shortest time between two polls of one container, ms. */
  intervalMs: number;
  /** The longest wait after throttling, ms; default 60 s. */
  maxBackoffMs?: number;
}

interface Follower {
  groupId: string;
  container: string;
  /** The pod's `ns/name`, for warnings. */
  pod?: string;
  /** The last answer was at the cap: poll again at the next slot, ahead of the others. */
  catchUp: boolean;
  /** The first poll's `StartTime` (RFC 3339); later ones ask from the cursor. */
  since?: string;
  cursor: LogCursor;
  dueMs: number;
}

const encoder = new TextEncoder();

/** Polls many ECI containers' logs under one request budget; see the module doc. */
export class LogBudget {
  readonly #o: LogBudgetOptions;
  /** The followers in turn order (its `members`); the next turn starts at {@link #next}. */
  readonly #feeds: PolledFeeds<Follower>;
  #next = 0;
  #nextRequestMs = 0;
  #backoffLevel = 0;
  /** DescribeContainerLog calls made, throttled, and answered at the cap (tests, the bench). */
  readonly stats = { requests: 0, throttled: 0, capped: 0 };

  constructor(options: LogBudgetOptions) {
    if (!(options.requestsPerSecond > 0)) throw new RangeError("requestsPerSecond must be > 0");
    this.#o = options;
    this.#feeds = new PolledFeeds({
      poll: (signal) => this.#run(signal),
      left: (_, index) => {
        if (index < this.#next) this.#next--;
      },
    });
  }

  /**
   * The container's log from `since` on (asked with timestamps, each line `<time> <text>\n`),
   * open until `signal` aborts or the reader cancels.
   */
  follow(
    groupId: string,
    container: string,
    options: { since?: Date; pod?: string; signal: AbortSignal },
  ): ReadableStream<Uint8Array> {
    const f: Follower = {
      groupId,
      container,
      pod: options.pod,
      catchUp: false,
      since: options.since?.toISOString(),
      cursor: new LogCursor(),
      dueMs: 0,
    };
    return this.#feeds.join(f, options.signal);
  }

  /** Settles once no one follows and the loop has ended. */
  idle(): Promise<void> {
    return this.#feeds.idle();
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const f = this.#dueFollower();
      if (!f) {
        const soonest = Math.min(...this.#feeds.members.map((x) => x.dueMs));
        const wait = Math.max(1, soonest - this.#o.clock.now());
        await this.#o.clock.sleep(Number.isFinite(wait) ? wait : 1, signal).catch(() => {});
        continue;
      }
      try {
        await this.#turn(signal);
      } catch {
        return; // the last follower left while waiting
      }
      if (this.#feeds.has(f)) await this.#poll(f, signal);
    }
  }

  /**
   * A follower whose last answer was at the cap, else the next in turn order whose interval has
   * passed, if any; it takes its turn.
   */
  #dueFollower(): Follower | undefined {
    const ring = this.#feeds.members;
    const behind = ring.find((f) => f.catchUp);
    if (behind) return behind;
    const now = this.#o.clock.now();
    for (let k = 0; k < ring.length; k++) {
      const i = (this.#next + k) % ring.length;
      const f = ring[i];
      if (f.dueMs <= now) {
        this.#next = (i + 1) % ring.length;
        return f;
      }
    }
    return undefined;
  }

  async #poll(f: Follower, signal: AbortSignal): Promise<void> {
    const wasCatchUp = f.catchUp;
    f.catchUp = false;
    try {
      this.stats.requests++;
      const from = f.cursor.lastStamp || f.since;
      let text = await this.#o.api.log({
        groupId: f.groupId,
        container: f.container,
        startTime: from,
        timestamps: true,
        tail: MAX_TAIL,
        limitBytes: MAX_LOG_BYTES,
      }, signal);
      this.#backoffLevel = Math.max(0, this.#backoffLevel - 1);
      const bytesCapped = encoder.encode(text).length >= MAX_LOG_BYTES;
      // A line cut at the byte cap comes whole in the next answer.
      if (bytesCapped && !text.endsWith("\n")) text = text.slice(0, text.lastIndexOf("\n") + 1);
      if (bytesCapped || text.split("\n").length - 1 >= MAX_TAIL) {
        this.stats.capped++;
        f.catchUp = !wasCatchUp;
        this.#warnSkipped(f, from, firstStamp(text));
      }
      const lines = f.cursor.take(text);
      this.#feeds.push(f, ...lines.map((l) => `${l}\n`));
    } catch (err) {
      if (signal.aborted) return;
      if (isThrottling(err) || isThrottling((err as { cause?: unknown })?.cause)) this.#backOff();
      else {
        this.#o.log.debug("{group}/{container}: polling the log for the mirror failed: {err}", {
          group: f.groupId,
          container: f.container,
          err,
        });
      }
    } finally {
      f.dueMs = this.#o.clock.now() + this.#o.intervalMs;
    }
  }

  /** A capped answer whose first line is newer than the poll's start: lines were skipped. */
  #warnSkipped(f: Follower, from: string | undefined, first: string | undefined): void {
    if (!first || (from && first <= from)) return;
    this.#o.log.warning(
      "{pod} container {container} (ECI group {group}): lines from {from} to {to} may be missing " +
        "from the node's log: the container wrote more than one DescribeContainerLog answer holds " +
        "({lines} lines or 1 MB) between two polls; raise logMirrorRequestsPerSecond or follow " +
        "fewer containers (--pod-log-max-streams)",
      {
        pod: f.pod ?? "a pod",
        container: f.container,
        group: f.groupId,
        from: from ?? "its start",
        to: first,
        lines: MAX_TAIL,
      },
    );
  }

  /** Waits for the budget's next slot. */
  async #turn(signal: AbortSignal): Promise<void> {
    const now = this.#o.clock.now();
    const at = Math.max(now, this.#nextRequestMs);
    this.#nextRequestMs = at + 1000 / this.#o.requestsPerSecond;
    if (at > now) await this.#o.clock.sleep(at - now, signal);
  }

  #backOff(): void {
    this.stats.throttled++;
    const cap = this.#o.maxBackoffMs ?? 60_000;
    const delay = Math.min(cap, (1000 / this.#o.requestsPerSecond) * 2 ** ++this.#backoffLevel);
    this.#nextRequestMs = Math.max(this.#nextRequestMs, this.#o.clock.now() + delay);
  }
}
