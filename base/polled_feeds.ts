/**
 * Many readers fed by one polling loop: the shape of a log mirror that reads a backend in
 * batches or under one request budget (fargate's FilterLogEvents rounds, eci's round-robin of
 * DescribeContainerLog) instead of a poll per reader. Each member (the caller's own object, with
 * whatever cursor it keeps) gets a byte stream of the text {@link PolledFeeds.push}ed for it; the
 * loop starts when the first member joins, its signal aborts when the last leaves (so its sleeps
 * and requests end), and it is started again if it returns while members remain. A member leaves
 * when the signal it joined with aborts or its reader cancels; its stream then ends once what was
 * pushed before is read.
 * @module
 */

/** What {@link PolledFeeds} needs. */
export interface PolledFeedsOptions<M> {
  /** The loop that polls for every member; see the module doc. */
  poll: (signal: AbortSignal) => Promise<void>;
  /** Told when a member leaves, with its place in {@link PolledFeeds.members} before it left. */
  left?: (member: M, index: number) => void;
}

interface Feed {
  queue: string[];
  wake?: () => void;
}

const encoder = new TextEncoder();

/** Readers fed by one loop; see the module doc. */
export class PolledFeeds<M> {
  /** The members in the order they joined (a member that left is not here). */
  readonly members: M[] = [];
  readonly #feeds = new Map<M, Feed>();
  readonly #o: PolledFeedsOptions<M>;
  #loop?: Promise<void>;
  #active = new AbortController();

  /** No members yet; see {@link PolledFeedsOptions}. */
  constructor(options: PolledFeedsOptions<M>) {
    this.#o = options;
  }

  /**
   * Adds `member` and returns its stream, open until `signal` aborts or the reader cancels (a
   * signal already aborted gives a stream that is closed, and adds nothing).
   */
  join(member: M, signal: AbortSignal): ReadableStream<Uint8Array> {
    if (signal.aborted) return new ReadableStream({ start: (c) => c.close() });
    const feed: Feed = { queue: [] };
    const leave = () => {
      const index = this.members.indexOf(member);
      if (index < 0) return;
      this.members.splice(index, 1);
      this.#feeds.delete(member);
      this.#o.left?.(member, index);
      feed.wake?.();
      if (this.members.length === 0) this.#active.abort();
    };
    signal.addEventListener("abort", leave, { once: true });
    this.members.push(member);
    this.#feeds.set(member, feed);
    this.#start();
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        while (feed.queue.length === 0) {
          if (signal.aborted || !this.#feeds.has(member)) return controller.close();
          await new Promise<void>((resolve) => feed.wake = resolve);
        }
        controller.enqueue(encoder.encode(feed.queue.splice(0).join("")));
      },
      cancel: () => {
        signal.removeEventListener("abort", leave);
        leave();
      },
    });
  }

  /** Whether `member` is still followed. */
  has(member: M): boolean {
    return this.#feeds.has(member);
  }

  /** Hands `texts` to `member`'s reader, in order; nothing once it left. */
  push(member: M, ...texts: string[]): void {
    const feed = this.#feeds.get(member);
    if (!feed || texts.length === 0) return;
    feed.queue.push(...texts);
    feed.wake?.();
  }

  /** Settles once no one follows and the loop has ended. */
  async idle(): Promise<void> {
    while (this.#loop) await this.#loop;
  }

  #start(): void {
    if (this.#loop) return;
    if (this.#active.signal.aborted) this.#active = new AbortController();
    this.#loop = this.#o.poll(this.#active.signal).finally(() => {
      this.#loop = undefined;
      if (this.members.length > 0) this.#start();
    });
  }
}
