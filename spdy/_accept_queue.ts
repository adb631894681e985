/**
 * A queue of peer-opened streams waiting for `accept()`, with abortable waiters.
 * @module
 */

/** Items pushed before anyone waits are kept; waiters get items in order, or null at close. */
export class AcceptQueue<T> {
  #items: T[] = [];
  #waiters: Array<(item: T | null) => void> = [];
  #closed = false;

  /** Items waiting to be taken. */
  get length(): number {
    return this.#items.length;
  }

  /** Hands `item` to the oldest waiter, or keeps it. */
  push(item: T): void {
    const waiter = this.#waiters.shift();
    if (waiter) waiter(item);
    else this.#items.push(item);
  }

  /** Forgets a queued item (e.g. a stream reset before it was accepted). */
  remove(item: T): void {
    const at = this.#items.indexOf(item);
    if (at >= 0) this.#items.splice(at, 1);
  }

  /** The next item; null once closed or when `signal` aborts first. */
  next(signal?: AbortSignal): Promise<T | null> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift()!);
    if (this.#closed || signal?.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const onAbort = () => {
        const at = this.#waiters.indexOf(deliver);
        if (at >= 0) this.#waiters.splice(at, 1);
        resolve(null);
      };
      const deliver = (item: T | null) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(item);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(deliver);
    });
  }

  /** Wakes every waiter with null and returns the items nobody took. */
  close(): T[] {
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) waiter(null);
    return this.#items.splice(0);
  }
}
