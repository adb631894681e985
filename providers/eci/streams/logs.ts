/**
 * `kubectl logs` through DescribeContainerLog: tail, since (seconds or time), timestamps and
 * limitBytes go to ECI as they are. ECI has no streaming log call, so `follow` polls: each round
 * asks, with timestamps, for the lines from the last one seen on, drops those already sent,
 * and strips the timestamps again unless the user asked for them. A candidate for the kit:
 * "follow by polling a lines-since API" is the same for every cloud provider's log service.
 * @module
 */
import type { Clock, ContainerLogOptions } from "../../../provider/mod.ts";
import type { EciApi, LogQuery } from "../client/api.ts";

/** What reading one container's log needs. */
export interface LogTarget {
  api: Pick<EciApi, "log">;
  groupId: string;
  container: string;
  clock: Clock;
  /** How often `follow` asks for new lines. */
  intervalMs: number;
}

/** The most lines one DescribeContainerLog answers (`Tail`'s maximum; without it, 500). */
export const MAX_TAIL = 2000;
/** The most bytes one DescribeContainerLog answers (`LimitBytes`' maximum, 1 MB). */
export const MAX_LOG_BYTES = 1_048_576;

const STAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) /;
const encoder = new TextEncoder();

/** The container's log as a stream; with `follow`, open until `options.signal` aborts. */
export async function readContainerLog(
  target: LogTarget,
  options: ContainerLogOptions,
): Promise<ReadableStream<Uint8Array>> {
  const query: LogQuery = {
    groupId: target.groupId,
    container: target.container,
    tail: options.tailLines,
    sinceSeconds: options.sinceSeconds,
    startTime: options.sinceTime?.toISOString(),
    previous: options.previous,
  };
  if (!options.follow) {
    const text = await target.api.log(
      { ...query, timestamps: options.timestamps, limitBytes: options.limitBytes },
      options.signal,
    );
    return once(clip(encoder.encode(text), options.limitBytes));
  }
  const first = await target.api.log({ ...query, timestamps: true }, options.signal);
  return follow(target, options, first);
}

function once(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      if (bytes.length) controller.enqueue(bytes);
      controller.close();
    },
  });
}

function clip(bytes: Uint8Array, limit: number | undefined): Uint8Array {
  return limit !== undefined && bytes.length > limit ? bytes.subarray(0, limit) : bytes;
}

/** Lines of ECI's answer with their timestamps; a last line without newline is kept whole. */
function linesOf(text: string): { stamp: string; line: string }[] {
  return text.split("\n").filter((l, i, all) => l !== "" || i < all.length - 1).map((line) => {
    const m = STAMP.exec(line);
    return { stamp: m?.[1] ?? "", line };
  });
}

/** The timestamp of an answer's first line (asked with timestamps), if it has one. */
export function firstStamp(text: string): string | undefined {
  return STAMP.exec(text)?.[1];
}

/**
 * Where a followed log is: the last line's timestamp and the lines sent at it, which the next
 * query (asked from that timestamp) gives again.
 */
export class LogCursor {
  /** The last line's timestamp (RFC 3339), "" before any. */
  lastStamp = "";
  #sentAtLast = new Set<string>();

  /** The lines of an answer (asked with timestamps) not sent yet, stamps kept. */
  take(text: string): string[] {
    const out: string[] = [];
    for (const { stamp, line } of linesOf(text)) {
      if (stamp && this.lastStamp && stamp < this.lastStamp) continue;
      if (stamp && stamp === this.lastStamp && this.#sentAtLast.has(line)) continue;
      if (stamp !== this.lastStamp) this.#sentAtLast = new Set();
      this.lastStamp = stamp || this.lastStamp;
      this.#sentAtLast.add(line);
      out.push(line);
    }
    return out;
  }
}

function follow(
  target: LogTarget,
  options: ContainerLogOptions,
  first: string,
): ReadableStream<Uint8Array> {
  const signal = options.signal;
  let left = options.limitBytes ?? Infinity;
  const cursor = new LogCursor();
  const take = (text: string): Uint8Array[] => {
    const out: Uint8Array[] = [];
    for (const line of cursor.take(text)) {
      const shown = options.timestamps ? line : line.replace(STAMP, "");
      const bytes = clip(encoder.encode(`${shown}\n`), left);
      left -= bytes.length;
      if (bytes.length) out.push(bytes);
    }
    return out;
  };
  let pending = take(first);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (!pending.length) {
        if (left <= 0 || signal?.aborted) return controller.close();
        try {
          await target.clock.sleep(target.intervalMs, signal);
          const text = await target.api.log({
            groupId: target.groupId,
            container: target.container,
            startTime: cursor.lastStamp || undefined,
            timestamps: true,
            // ECI's default is the newest 500 lines: a fast writer would lose lines.
            tail: MAX_TAIL,
          }, signal);
          pending = take(text);
        } catch (err) {
          if (signal?.aborted) return controller.close();
          return controller.error(err);
        }
      }
      controller.enqueue(pending.shift()!);
    },
  });
}
