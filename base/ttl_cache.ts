/**
 * A small map whose entries expire after a per-entry TTL read from the injected clock, with a
 * size bound (oldest entries go first). Used for TokenReview and SubjectAccessReview answers.
 * @module
 */
import type { Clock } from "./clock.ts";

/** Options for {@link TtlCache}. */
export interface TtlCacheOptions {
  clock: Clock;
  /** At most this many entries; the oldest is dropped first. Default 4096. */
  maxEntries?: number;
}

/** Entries that expire; see the module doc. */
export class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; expiresAt: number }>();
  readonly #clock: Clock;
  readonly #max: number;

  constructor(options: TtlCacheOptions) {
    this.#clock = options.clock;
    this.#max = options.maxEntries ?? 4096;
  }

  /** The value stored under `key`, unless it has expired. */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.#clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Stores `value` for `ttlMs`; a TTL of 0 or less stores nothing. */
  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAt: this.#clock.now() + ttlMs });
    while (this.#entries.size > this.#max) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
  }

  get size(): number {
    return this.#entries.size;
  }
}
