/**
 * `kubectl logs` through `/getLogs`: every option of the kubelet's goes into interLink's
 * `ContainerLogOpts` (tail, since, timestamps, limitBytes, previous). No read asks for the whole
 * log: without tail, each asks for at most `maxResponseBytes` (`Bytes`); interLink's API server
 * refuses Tail together with LimitBytes (pkg/interlink/api/logs.go, interlink-hq/interLink commit
 * f632175701d78b604138ce2e1e38af13d1f7546b), so with tail the answer is bounded by the client,
 * and the user's byte limit is always applied here too.
 *
 * `follow` is done by polling, since plugins' own follow support varies. Each poll asks only for
 * what has not been shown: the log with timestamps since the last one shown, whose lines up to
 * that instant are dropped here. A plugin that ignores `Timestamps` (the SLURM plugin does,
 * interlink-hq/interlink-slurm-plugin f8451d93, pkg/slurm/GetLogs.go:197-202) is followed by
 * reading its log again, bounded, and sending what follows what was seen.
 * @module
 */
import { Buffer } from "node:buffer";
import type { Clock, ContainerLogOptions } from "../../../provider/mod.ts";
import type { InterlinkApi } from "../client/api.ts";
import type { InterlinkConfig } from "../config.ts";
import { GO_ZERO_TIME, type LogStruct } from "../client/wire.ts";

/** Who the log is of, and how to read it. */
export interface LogTarget {
  api: InterlinkApi;
  namespace: string;
  pod: string;
  uid: string;
  container: string;
  /** Now (clock ms), to fix `sinceSeconds` for follow polls. */
  now: () => number;
  /** Sleeps between follow polls. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** How often a follow polls, ms. */
  pollMs: number;
  /** `target: interlink` refuses tail with a byte limit. */
  interlink: boolean;
  /** The largest answer the client reads (`maxResponseBytes`). */
  maxBytes: number;
}

/** How the provider reads every log: a {@link LogTarget} without the container, polling each second. */
export function logReading(
  api: InterlinkApi,
  deps: { config: InterlinkConfig; clock: Clock },
): Omit<LogTarget, "namespace" | "pod" | "uid" | "container"> {
  const { config, clock } = deps;
  return {
    api,
    now: () => clock.now(),
    sleep: (ms, signal) => clock.sleep(ms, signal),
    pollMs: 1000,
    interlink: config.target === "interlink",
    maxBytes: config.maxResponseBytes,
  };
}

/** An RFC 3339 time at the start of a line, then one space. */
const STAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) /;

/** The log as a stream; see the module doc. */
export async function readLog(
  target: LogTarget,
  options: ContainerLogOptions,
): Promise<ReadableStream<Uint8Array>> {
  const limit = options.limitBytes ?? Infinity;
  if (!options.follow) {
    const text = await fetchLog(target, logStruct(target, options), options.signal);
    return ReadableStream.from([cut(Buffer.from(text, "utf8"), limit)]);
  }
  const follower = new Follower(target, options);
  const first = await follower.next();
  let sent = 0;
  const signal = options.signal;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const chunk = cut(first, limit);
      sent += chunk.length;
      if (chunk.length) controller.enqueue(chunk);
      if (sent >= limit) controller.close();
    },
    async pull(controller) {
      while (!signal?.aborted && sent < limit) {
        await target.sleep(target.pollMs, signal).catch(() => {});
        if (signal?.aborted) break;
        const fresh = await follower.next().catch(() => undefined);
        if (!fresh?.length) continue;
        const out = cut(fresh, limit - sent);
        sent += out.length;
        controller.enqueue(out);
        return;
      }
      controller.close();
    },
  });
}

/** A followed log: each `next()` answers what the plugin has that was not shown yet. */
class Follower {
  readonly #target: LogTarget;
  readonly #options: ContainerLogOptions;
  /** The last time stamp shown, and how many lines carried it; undefined before any. */
  #last?: { stamp: string; lines: number };
  /** Whether the plugin stamps its lines; unknown until it answered with some. */
  #stamps?: boolean;
  /** Bytes seen of an unstamped log. */
  #seen = 0;
  #first = true;

  constructor(target: LogTarget, options: ContainerLogOptions) {
    this.#target = target;
    this.#options = options;
  }

  async next(): Promise<Uint8Array> {
    const first = this.#first;
    this.#first = false;
    if (this.#stamps === false) return this.#unstamped();
    const request = logStruct(this.#target, this.#options);
    request.Opts.Timestamps = true;
    if (!first) {
      request.Opts.Tail = 0;
      request.Opts.Bytes = this.#target.maxBytes - 1;
      request.Opts.SinceSeconds = 0;
      request.Opts.SinceTime = this.#last?.stamp ?? sinceTimeOf(this.#target, this.#options) ??
        GO_ZERO_TIME;
    }
    const text = await fetchLog(this.#target, request, this.#options.signal);
    const lines = text.split(/(?<=\n)/).filter((l) => l !== "");
    if (lines.length && this.#stamps === undefined) this.#stamps = STAMP.test(lines[0]);
    if (this.#stamps === false) {
      // The plugin ignored Timestamps: this answer honoured tail and since; what was seen is the
      // log from since onwards.
      this.#seen = Buffer.byteLength(
        await fetchLog(this.#target, this.#whole(), this.#options.signal),
        "utf8",
      );
      return Buffer.from(text, "utf8");
    }
    const out: string[] = [];
    let repeated = this.#last?.lines ?? 0;
    for (const line of lines) {
      const stamp = line.match(STAMP)?.[1];
      if (!stamp) continue;
      if (this.#last && stamp < this.#last.stamp) continue;
      // Lines at the instant already shown come again: the plugins' since is inclusive.
      if (this.#last && stamp === this.#last.stamp && repeated-- > 0) continue;
      out.push(this.#options.timestamps ? line : line.slice(stamp.length + 1));
    }
    const stamps = lines.map((l) => l.match(STAMP)?.[1]).filter((s): s is string => !!s);
    const newest = stamps.at(-1);
    // Every line at the newest instant is in this answer (it asked since the last one shown).
    if (newest) this.#last = { stamp: newest, lines: stamps.filter((s) => s === newest).length };
    return Buffer.from(out.join(""), "utf8");
  }

  /** The bounded log from the user's since onwards, unstamped. */
  #whole(): LogStruct {
    const whole = logStruct(this.#target, this.#options);
    Object.assign(whole.Opts, {
      Tail: 0,
      Bytes: this.#target.maxBytes - 1,
      Timestamps: false,
      SinceSeconds: 0,
      SinceTime: sinceTimeOf(this.#target, this.#options) ?? GO_ZERO_TIME,
    });
    return whole;
  }

  /** A plugin without time stamps: its bounded log again, and what follows what was seen. */
  async #unstamped(): Promise<Uint8Array> {
    const bytes = Buffer.from(
      await fetchLog(this.#target, this.#whole(), this.#options.signal),
      "utf8",
    );
    const fresh = bytes.length >= this.#seen ? bytes.subarray(this.#seen) : bytes;
    this.#seen = bytes.length;
    return fresh;
  }
}

function logStruct(target: LogTarget, o: ContainerLogOptions): LogStruct {
  const tail = o.tailLines ?? 0;
  // Without tail, never the whole log: at most what the client reads (the SLURM plugin answers
  // one byte more than Bytes, pkg/slurm/GetLogs.go:244).
  const bytes = tail > 0 && target.interlink
    ? 0
    : Math.min(o.limitBytes ?? Infinity, target.maxBytes - 1);
  return {
    Namespace: target.namespace,
    PodUID: target.uid,
    PodName: target.pod,
    ContainerName: target.container,
    Opts: {
      Tail: tail,
      Bytes: bytes,
      Timestamps: o.timestamps ?? false,
      Follow: false, // never asked of the plugin: polled instead
      Previous: o.previous ?? false,
      SinceSeconds: o.sinceSeconds ?? 0,
      SinceTime: o.sinceTime ? o.sinceTime.toISOString() : GO_ZERO_TIME,
    },
  };
}

function sinceTimeOf(target: LogTarget, o: ContainerLogOptions): string | undefined {
  if (o.sinceTime) return o.sinceTime.toISOString();
  if (o.sinceSeconds) return new Date(target.now() - o.sinceSeconds * 1000).toISOString();
  return undefined;
}

function cut(bytes: Uint8Array, limit: number): Uint8Array {
  return bytes.subarray(0, Math.min(bytes.length, limit));
}

async function fetchLog(
  target: LogTarget,
  request: LogStruct,
  signal?: AbortSignal,
): Promise<string> {
  return await target.api.logs(request, signal);
}
