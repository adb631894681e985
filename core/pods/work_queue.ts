/**
 * A keyed work queue in the manner of client-go's `util/workqueue`: a key is queued at most
 * once, a key added while it is being processed runs again afterwards, failures come back after
 * a per-key exponential backoff with jitter, and retries share a global token bucket, so a storm
 * of failing pods cannot flood the apiserver or the provider. Workers start when keys arrive and
 * end when the queue is empty, so an idle queue holds no parked worker (a process serving 1,000
 * nodes has 2,000 queues).
 * @module
 */
import { cancel } from "../../base/cancel.ts";
import { type Clock, jitter } from "../../base/clock.ts";
import { Slicer } from "../../base/event_loop.ts";
import type { Logger } from "../../base/log.ts";
import type { QueueMetrics } from "../standard_metrics.ts";

/** Workers let the event loop turn after this much work without a wait (see base/event_loop.ts). */
const SLICE_MS = 10;

/** What a processing function may ask for after it succeeded. */
export interface ProcessResult {
  /** Process this key again after this many milliseconds (e.g. a grace period ends). */
  requeueAfterMs?: number;
}

/** Processes one key; throwing schedules a retry with backoff. */
export type ProcessKey = (
  key: string,
  signal: AbortSignal,
) => Promise<ProcessResult | void> | ProcessResult | void;

/** Options for {@link WorkQueue}. */
export interface WorkQueueOptions {
  clock: Clock;
  log: Logger;
  process: ProcessKey;
  /** Keys processed at once; default 10 (virtual-kubelet's `--pod-sync-workers`). */
  workers?: number;
  /** First retry delay; doubles per failure. Default 200 ms. */
  baseDelayMs?: number;
  /** Retry delay cap; a failing key keeps being retried at this pace. Default 5 min. */
  maxDelayMs?: number;
  /** Retries per second across all keys (token bucket); default 10, like client-go. */
  qps?: number;
  /** Retries allowed in a burst; default 100. */
  burst?: number;
  /** Extra delay for an error, e.g. a provider's `retryAfterMs`; return 0 for none. */
  retryAfter?: (err: unknown) => number;
  /** Told of adds, waits, work and retries (`workqueue_*`); default none. */
  metrics?: QueueMetrics;
}

/** A deduplicating keyed queue with bounded workers; see the module doc. */
export class WorkQueue {
  #opts:
    & Required<Omit<WorkQueueOptions, "retryAfter" | "metrics">>
    & Pick<WorkQueueOptions, "retryAfter">;
  #metrics: QueueMetrics | undefined;
  /**
   * When each key counted as added entered the queue (clock ms), until a worker takes it; only
   * while metrics are kept.
   */
  #addedAt = new Map<string, number>();
  #queue: string[] = [];
  #queued = new Set<string>();
  #processing = new Set<string>();
  #dirtyWhileProcessing = new Set<string>();
  #failures = new Map<string, number>();
  #delayed = new Map<string, number>();
  #signal: AbortSignal | undefined;
  #workers = new Set<Promise<void>>();
  /** Workers running, and those of them not holding a key. */
  #active = 0;
  #idle = 0;
  /** Ends the timer loop's current wait: its sleep until the next delayed key, or for one. */
  #wakeTimerLoop: (() => void) | undefined;
  #slicer = new Slicer(SLICE_MS);
  /** Callers of {@link drained} waiting for no key to be queued or in progress. */
  #drainWaiters: (() => void)[] = [];
  #tokens: number;
  #tokensAt: number;

  constructor(options: WorkQueueOptions) {
    this.#opts = {
      workers: 10,
      baseDelayMs: 200,
      maxDelayMs: 300_000,
      qps: 10,
      burst: 100,
      ...options,
    };
    if (!(this.#opts.workers >= 1)) throw new RangeError("workers must be at least 1");
    this.#metrics = options.metrics;
    this.#tokens = this.#opts.burst;
    this.#tokensAt = options.clock.now();
  }

  /** Keys waiting to be processed now (not counting delayed ones). */
  get length(): number {
    return this.#queue.length;
  }

  /** Keys waiting for a delay to pass. */
  get delayedLength(): number {
    return this.#delayed.size;
  }

  /** Failures of `key` since its last success. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** Queues `key` now; a no-op if it is already queued. */
  add(key: string): void {
    this.#delayed.delete(key);
    if (this.#processing.has(key)) {
      if (!this.#dirtyWhileProcessing.has(key)) {
        this.#dirtyWhileProcessing.add(key);
        // client-go counts it now, in the depth too, though it waits for the processing to end.
        this.#noteAdded(key);
      }
      return;
    }
    if (this.#queued.has(key)) return;
    this.#queued.add(key);
    this.#queue.push(key);
    this.#noteAdded(key);
    this.#spawn();
  }

  /** Counts an add (`workqueue_adds_total`, the depth) unless the key's add is counted already. */
  #noteAdded(key: string): void {
    if (!this.#metrics || this.#addedAt.has(key)) return;
    this.#metrics.added();
    this.#addedAt.set(key, this.#opts.clock.now());
  }

  /**
   * Resolves once no key is queued or in progress (keys waiting for a delay do not count): at
   * once if that is so now. For "the work there was has been done" (the start-up log line).
   */
  drained(): Promise<void> {
    if (this.#isDrained()) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  #isDrained(): boolean {
    return this.#queue.length === 0 && this.#processing.size === 0;
  }

  /** Starts a worker if keys wait and fewer than `workers` run (only while running). */
  #spawn(): void {
    const signal = this.#signal;
    if (!signal || signal.aborted) return;
    // Idle workers (started, or between keys) take the queued keys; start one for each beyond.
    if (this.#active >= this.#opts.workers || this.#idle >= this.#queue.length) return;
    this.#active++;
    this.#idle++;
    const worker = this.#worker(signal);
    this.#workers.add(worker);
    worker.finally(() => this.#workers.delete(worker));
  }

  /** Queues `key` after `ms`; an earlier pending time for the key wins. */
  addAfter(key: string, ms: number): void {
    // Counted on every call, as client-go's delaying queue counts `AddAfter` (delaying_queue.go).
    this.#metrics?.retried();
    if (ms <= 0) return this.add(key);
    if (this.#queued.has(key)) return;
    const due = this.#opts.clock.now() + ms;
    const current = this.#delayed.get(key);
    if (current !== undefined && current <= due) return;
    this.#delayed.set(key, due);
    this.#wakeTimerLoop?.();
  }

  /** Clears the failure count of `key`, so its next failure starts the backoff again. */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /**
   * Drops what the queue holds for `key` beyond its turn: its failure count and a delayed retry
   * (a key queued or in progress still runs). For a key whose object is gone for good.
   */
  drop(key: string): void {
    this.#failures.delete(key);
    if (this.#delayed.delete(key)) this.#wakeTimerLoop?.();
  }

  /** The delay before the next retry of `key`, counting this failure. */
  #retryDelay(key: string, err: unknown): number {
    const n = (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, n);
    const { baseDelayMs, maxDelayMs } = this.#opts;
    const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(n - 1, 40));
    const extra = this.#opts.retryAfter?.(err) ?? 0;
    return Math.max(jitter(backoff, 0.2), this.#reserveToken(), extra);
  }

  /** Takes a token from the global bucket; returns how long the caller must wait for it. */
  #reserveToken(): number {
    const { qps, burst, clock } = this.#opts;
    if (qps <= 0) return 0;
    const now = clock.now();
    this.#tokens = Math.min(burst, this.#tokens + ((now - this.#tokensAt) / 1000) * qps);
    this.#tokensAt = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : (-this.#tokens / qps) * 1000;
  }

  /** Runs the workers until `signal` aborts, then waits for the keys in progress to finish. */
  async run(signal: AbortSignal): Promise<void> {
    const onAbort = () => this.#wakeTimerLoop?.();
    signal.addEventListener("abort", onAbort, { once: true });
    this.#signal = signal;
    try {
      // Keys added before the start.
      for (let i = 0; i < Math.min(this.#queue.length, this.#opts.workers); i++) this.#spawn();
      await this.#timerLoop(signal);
      while (this.#workers.size > 0) await Promise.all(this.#workers);
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#slicer.stop();
      this.#metrics?.discarded(this.#addedAt.size);
      this.#addedAt.clear();
    }
  }

  /** Takes keys until the queue is empty or `signal` aborts. */
  async #worker(signal: AbortSignal): Promise<void> {
    try {
      // Start on a later tick, so that `add` never runs a key's processing synchronously.
      await Promise.resolve();
      while (!signal.aborted) {
        const key = this.#queue.shift();
        if (key === undefined) return;
        this.#idle--;
        this.#queued.delete(key);
        this.#processing.add(key);
        if (this.#metrics) await this.#processMeasured(key, signal);
        else await this.#processOne(key, signal);
        this.#processing.delete(key);
        this.#idle++;
        if (this.#dirtyWhileProcessing.delete(key) && !signal.aborted) this.add(key);
        if (this.#drainWaiters.length > 0 && this.#isDrained()) {
          for (const resolve of this.#drainWaiters.splice(0)) resolve();
        }
        // Keys whose processing never waits on I/O (an in-memory provider) would otherwise run
        // back to back and hold every socket until the queue is empty.
        const turn = this.#slicer.take();
        if (turn) await turn;
      }
    } finally {
      // In the same tick as the last `shift`: an `add` after it starts a new worker.
      this.#idle--;
      this.#active--;
    }
  }

  /** {@link processOne} with the key's wait in the queue and its processing time told. */
  async #processMeasured(key: string, signal: AbortSignal): Promise<void> {
    const clock = this.#opts.clock;
    const taken = clock.now();
    this.#metrics!.taken((taken - (this.#addedAt.get(key) ?? taken)) / 1000);
    this.#addedAt.delete(key);
    await this.#processOne(key, signal);
    this.#metrics!.done((clock.now() - taken) / 1000);
  }

  async #processOne(key: string, signal: AbortSignal): Promise<void> {
    try {
      const result = await this.#opts.process(key, signal);
      this.forget(key);
      if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      if (signal.aborted) return;
      const delay = this.#retryDelay(key, err);
      this.#opts.log.debug("retrying {key} in {delay} ms (failure {failures}): {err}", {
        key,
        delay: Math.round(delay),
        failures: this.failures(key),
        err: err instanceof Error ? err.message : String(err),
      });
      this.addAfter(key, delay);
    }
  }

  /** Moves delayed keys into the queue when they are due. */
  async #timerLoop(signal: AbortSignal): Promise<void> {
    const { clock } = this.#opts;
    while (!signal.aborted) {
      const now = clock.now();
      let next = Infinity;
      for (const [key, due] of this.#delayed) {
        if (due <= now) {
          this.#delayed.delete(key);
          this.add(key);
        } else next = Math.min(next, due);
      }
      // Woken by addAfter, drop, or the end of the run (`run` listens on `signal` for that).
      if (next === Infinity) {
        // No delayed key: no timer at all, so an idle queue holds none (2,000 queues for 1,000
        // nodes).
        await new Promise<void>((resolve) => (this.#wakeTimerLoop = resolve));
      } else {
        const timer = new AbortController();
        this.#wakeTimerLoop = () => cancel(timer);
        await clock.sleep(next - now, timer.signal).catch(() => {});
      }
    }
  }
}
