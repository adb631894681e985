/**
 * The log mirror's batched CloudWatch Logs reads (providers/fargate/streams/log_batch.ts) against
 * a fake FilterLogEvents of our own interface: one request per group and 100 streams a round,
 * paging, each event once and in order per stream, the request rate held, ThrottlingException
 * backed off (moto cannot throttle) and a throttled batch going on from its page, a vkubelet clock
 * ahead of AWS's, and AccessDeniedException warned about once.
 */
import assert from "node:assert/strict";
import type {
  FilterLogEventsCommandInput,
  FilterLogEventsCommandOutput,
} from "@aws-sdk/client-cloudwatch-logs";
import { realClock } from "../../../base/clock.ts";
import type { Logger } from "../../../provider/mod.ts";
import type { FilterLogEventsApi } from "../../../providers/fargate/client/log_events.ts";
import { LogBatch, type LogBatchOptions } from "../../../providers/fargate/streams/log_batch.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const quiet: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };

interface StoredEvent {
  group: string;
  stream: string;
  timestamp: number;
  eventId: string;
  message: string;
}

/** FilterLogEvents over events kept in memory, as CloudWatch answers it (moto's paging). */
class FakeLogs implements FilterLogEventsApi {
  readonly events: StoredEvent[] = [];
  readonly requests: { input: FilterLogEventsCommandInput; atMs: number }[] = [];
  /** Answers the next this many requests with ThrottlingException. */
  throttleNext = 0;
  /** Answers every this-many-th request with ThrottlingException (0: none). */
  throttleEvery = 0;
  /** Answers every request with this error (an AWS error name), if set. */
  failWith?: string;
  #id = 0;

  put(group: string, stream: string, timestamp: number, message: string): void {
    this.events.push({ group, stream, timestamp, eventId: String(++this.#id), message });
  }

  filterLogEvents(input: FilterLogEventsCommandInput): Promise<FilterLogEventsCommandOutput> {
    this.requests.push({ input, atMs: performance.now() });
    assert.ok((input.logStreamNames?.length ?? 0) <= 100, "at most 100 logStreamNames");
    if (this.failWith) {
      return Promise.reject(Object.assign(new Error(`${this.failWith} from the fake`), {
        name: this.failWith,
        $metadata: { httpStatusCode: 400 },
      }));
    }
    const nth = this.throttleEvery > 0 && this.requests.length % this.throttleEvery === 0;
    if (this.throttleNext > 0 || nth) {
      if (!nth) this.throttleNext--;
      const err = Object.assign(new Error("Rate exceeded"), {
        name: "ThrottlingException",
        $metadata: { httpStatusCode: 400 },
      });
      return Promise.reject(err);
    }
    const names = new Set(input.logStreamNames ?? []);
    const matched = this.events
      .filter((e) => e.group === input.logGroupName && names.has(e.stream))
      .filter((e) => input.startTime === undefined || e.timestamp >= input.startTime)
      .sort((a, b) => a.timestamp - b.timestamp);
    const from = input.nextToken ? Number(input.nextToken) : 0;
    const to = Math.min(matched.length, from + (input.limit ?? 10_000));
    const events = matched.slice(from, to).map((e) => ({
      logStreamName: e.stream,
      timestamp: e.timestamp,
      eventId: e.eventId,
      message: e.message,
    }));
    return Promise.resolve({
      $metadata: {},
      events,
      nextToken: to < matched.length ? String(to) : undefined,
    });
  }
}

/** Reads `stream` into `into` as lines until it ends. */
async function collect(stream: ReadableStream<Uint8Array>, into: string[]): Promise<void> {
  let pending = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop()!;
    into.push(...lines);
  }
}

function batchOf(api: FilterLogEventsApi, options: Partial<LogBatchOptions> = {}): LogBatch {
  return new LogBatch({
    api,
    clock: realClock,
    log: quiet,
    intervalMs: 20,
    requestsPerSecond: 1000,
    ...options,
  });
}

/** Lines are stamped near now, as the awslogs driver stamps them. */
const T0 = Date.now();

Deno.test("a round asks once per log group and 100 streams, not once per stream", async () => {
  const api = new FakeLogs();
  const batch = batchOf(api);
  const stop = new AbortController();
  const seen = new Map<string, string[]>();
  const readers: Promise<void>[] = [];
  const follow = (group: string, n: number) => {
    for (let i = 0; i < n; i++) {
      const name = `vk/app/task-${i}`;
      api.put(group, name, T0, `${group} ${i}`);
      const lines: string[] = [];
      seen.set(`${group}/${name}`, lines);
      readers.push(collect(batch.follow(group, name, { signal: stop.signal }), lines));
    }
  };
  follow("/big", 250);
  follow("/small", 30);
  try {
    await eventually("every stream's line", () => [...seen.values()].every((l) => l.length === 1));
    // Steady rounds (the first began before every follower had joined): four requests each,
    // ceil(250 / 100) = 3 for one group and ceil(30 / 100) = 1 for the other, for 280 streams.
    const [n0, r0] = [api.requests.length, batch.stats.rounds];
    await eventually("five more rounds", () => batch.stats.rounds >= r0 + 5);
    const [n1, r1] = [api.requests.length, batch.stats.rounds];
    const made = n1 - n0;
    assert.ok(made >= (r1 - r0 - 1) * 4 && made <= (r1 - r0 + 1) * 4, `${made} in ${r1 - r0}`);
    const round = api.requests.slice(n0).findIndex((r) => r.input.logGroupName === "/big");
    const one = api.requests.slice(n0 + round, n0 + round + 4).map((r) => r.input);
    assert.deepEqual(one.map((i) => [i.logGroupName, i.logStreamNames!.length]), [
      ["/big", 100],
      ["/big", 100],
      ["/big", 50],
      ["/small", 30],
    ]);
  } finally {
    stop.abort();
    await Promise.all(readers);
    await batch.idle();
  }
});

Deno.test("each stream gets its events once and in order, across pages and rounds", async () => {
  const api = new FakeLogs();
  const batch = batchOf(api, { pageLimit: 3 });
  const stop = new AbortController();
  const a: string[] = [];
  const b: string[] = [];
  // Two lines of a at the same millisecond: told apart by their event ids.
  api.put("/g", "a", T0, "a1");
  api.put("/g", "a", T0, "a2");
  api.put("/g", "b", T0 + 1, "b1");
  const readers = [
    collect(batch.follow("/g", "a", { signal: stop.signal }), a),
    // b from a later time: an earlier event of b is not its.
    collect(batch.follow("/g", "b", { sinceMs: T0 + 1, signal: stop.signal }), b),
  ];
  api.put("/g", "b", T0, "b0 before b's since");
  try {
    await eventually("the first lines", () => a.length === 2 && b.length === 1);
    for (let i = 3; i <= 8; i++) {
      api.put("/g", i % 2 ? "a" : "b", T0 + i, `${i % 2 ? "a" : "b"}${i}`);
    }
    await eventually("the later lines", () => a.length === 5 && b.length === 4);
    // A few more rounds: nothing is given twice.
    const rounds = batch.stats.rounds;
    await eventually("three more rounds", () => batch.stats.rounds >= rounds + 3);
    const text = (lines: string[]) => lines.map((l) => l.slice(l.indexOf(" ") + 1));
    assert.deepEqual(text(a), ["a1", "a2", "a3", "a5", "a7"]);
    assert.deepEqual(text(b), ["b1", "b4", "b6", "b8"]);
    assert.match(a[0], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z a1$/);
    assert.ok(api.requests.some((r) => r.input.nextToken), "paged with nextToken");
  } finally {
    stop.abort();
    await Promise.all(readers);
    await batch.idle();
  }
});

Deno.test("an idle stream does not hold its batch's requests at its old cursor", async () => {
  const api = new FakeLogs();
  const batch = batchOf(api, { latenessMs: 1000 });
  const stop = new AbortController();
  const lines: string[] = [];
  const busy: string[] = [];
  const old = Date.now() - 3_600_000;
  api.put("/g", "idle", old, "an hour ago");
  api.put("/g", "busy", Date.now(), "now");
  const readers = [
    collect(batch.follow("/g", "idle", { sinceMs: old, signal: stop.signal }), lines),
    collect(batch.follow("/g", "busy", { sinceMs: old, signal: stop.signal }), busy),
  ];
  try {
    await eventually("the old line", () => lines.length === 1 && busy.length === 1);
    await eventually("two more rounds", () => batch.stats.rounds >= 3);
    const last = api.requests.at(-1)!.input.startTime!;
    assert.ok(last >= Date.now() - 5_000, `asked from ${Date.now() - last} ms ago`);
  } finally {
    stop.abort();
    await Promise.all(readers);
    await batch.idle();
  }
});

Deno.test("requests go out no faster than requestsPerSecond", async () => {
  const api = new FakeLogs();
  // 5 groups: 5 requests a round, at most 20 a second, with no pause between rounds.
  const batch = batchOf(api, { intervalMs: 0, requestsPerSecond: 20 });
  const stop = new AbortController();
  const readers = [0, 1, 2, 3, 4].map((g) =>
    collect(batch.follow(`/g${g}`, "s", { signal: stop.signal }), [])
  );
  try {
    await new Promise((r) => setTimeout(r, 1_000));
    const n = api.requests.length;
    assert.ok(n >= 15 && n <= 21, `${n} requests in 1 s at 20/s`);
    const times = api.requests.map((r) => r.atMs);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    assert.ok(Math.min(...gaps) >= 45, `the shortest gap was ${Math.min(...gaps)} ms`);
  } finally {
    stop.abort();
    await Promise.all(readers);
    await batch.idle();
  }
});

Deno.test("ThrottlingException holds requests back longer each time, and nothing is lost", async () => {
  const api = new FakeLogs();
  const batch = batchOf(api, { intervalMs: 20, random: () => 0 });
  const stop = new AbortController();
  const lines: string[] = [];
  api.put("/g", "s", T0, "before");
  api.throttleNext = 3;
  const reader = collect(batch.follow("/g", "s", { signal: stop.signal }), lines);
  try {
    await eventually("the line once throttling stops", () => lines.length === 1, 5_000);
    api.put("/g", "s", T0 + 1, "after");
    await eventually("the next line", () => lines.length === 2);
    assert.equal(batch.stats.throttled, 3);
    // Waits of at least interval × 2^n / 2 (random 0): 20, 40, 80 ms.
    const t = api.requests.map((r) => r.atMs);
    for (const [i, least] of [[1, 20], [2, 40], [3, 80]]) {
      assert.ok(t[i] - t[i - 1] >= least - 2, `wait ${i}: ${t[i] - t[i - 1]} ms < ${least}`);
    }
    assert.deepEqual(lines.map((l) => l.slice(l.indexOf(" ") + 1)), ["before", "after"]);
  } finally {
    stop.abort();
    await reader;
    await batch.idle();
  }
});

Deno.test("a throttle mid-paging goes on from that page: a backlog is read to its end", async () => {
  const api = new FakeLogs();
  // 2 events a page, every third request throttled: starting the batch over after each throttle
  // would read pages 1 and 2 forever and never page 3.
  api.throttleEvery = 3;
  const batch = batchOf(api, { pageLimit: 2, random: () => 0, maxBackoffMs: 20 });
  const stop = new AbortController();
  const lines: string[] = [];
  for (let i = 0; i < 10; i++) api.put("/g", "s", T0 + i, `e${i}`);
  const reader = collect(batch.follow("/g", "s", { signal: stop.signal }), lines);
  try {
    await eventually("the whole backlog", () => lines.length === 10, 3_000);
    await new Promise((r) => setTimeout(r, 100));
    const text = lines.map((l) => l.slice(l.indexOf(" ") + 1));
    assert.deepEqual(text, Array.from({ length: 10 }, (_, i) => `e${i}`));
    assert.ok(batch.stats.throttled >= 2, `${batch.stats.throttled} throttled`);
  } finally {
    stop.abort();
    await reader;
    await batch.idle();
  }
});

Deno.test("a vkubelet clock 2 minutes ahead of AWS's skips no new event of an idle stream", async () => {
  const api = new FakeLogs();
  const ahead = { ...realClock, now: () => Date.now() + 120_000 };
  const batch = batchOf(api, { clock: ahead });
  const stop = new AbortController();
  const busy: string[] = [];
  const still: string[] = [];
  api.put("/g", "busy", Date.now(), "busy 1");
  const readers = [
    collect(batch.follow("/g", "busy", { signal: stop.signal }), busy),
    collect(batch.follow("/g", "quiet", { signal: stop.signal }), still),
  ];
  try {
    await eventually("the busy line", () => busy.length === 1);
    const rounds = batch.stats.rounds;
    await eventually("two more rounds", () => batch.stats.rounds >= rounds + 2);
    // Stamped by AWS's clock (the container's host), 2 minutes behind vkubelet's.
    api.put("/g", "quiet", Date.now(), "quiet 1");
    await eventually("the quiet stream's line", () => still.length === 1, 2_000);
  } finally {
    stop.abort();
    await Promise.all(readers);
    await batch.idle();
  }
});

Deno.test("AccessDeniedException is a warning once, naming logs:FilterLogEvents", async () => {
  const api = new FakeLogs();
  api.failWith = "AccessDeniedException";
  const warnings: string[] = [];
  const log: Logger = {
    ...quiet,
    warning: (m, p) => warnings.push(m.replace(/\{(\w+)\}/g, (_, k) => String(p?.[k]))),
  };
  const batch = batchOf(api, { log: { ...log, warn: log.warning } });
  const stop = new AbortController();
  const reader = collect(batch.follow("/ecs/vk", "s", { signal: stop.signal }), []);
  try {
    await eventually("five rounds", () => batch.stats.rounds >= 5);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(warnings[0], /logs:FilterLogEvents/);
    assert.match(warnings[0], /\/ecs\/vk/);
    assert.match(warnings[0], /AccessDeniedException/);
  } finally {
    stop.abort();
    await reader;
    await batch.idle();
  }
});

Deno.test("rounds before a stream has any event ask from its start, with a finite startTime or none", async () => {
  const api = new FakeLogs();
  const batch = batchOf(api);
  const stop = new AbortController();
  const lines: string[] = [];
  const reader = collect(batch.follow("/g", "late", { signal: stop.signal }), lines);
  try {
    await eventually("three rounds of an empty stream", () => batch.stats.rounds >= 3);
    // CloudWatch (and moto) refuse a startTime that is not a number of milliseconds.
    for (const { input } of api.requests) {
      assert.ok(
        input.startTime === undefined || Number.isFinite(input.startTime),
        `startTime ${input.startTime} sent`,
      );
    }
    api.put("/g", "late", Date.now(), "late 1");
    await eventually("the first line", () => lines.length === 1);
  } finally {
    stop.abort();
    await reader;
    await batch.idle();
  }
});
