/**
 * Letting the event loop turn in the middle of a long run of work that never waits on I/O (a
 * restart hands 10,000 pods to an in-memory provider: promises resolved at once, one after the
 * other). Until such a run ends, no socket is read or written: the next page of a list is not
 * asked for, a lease renewal waits, the kubelet API answers nobody.
 *
 * Measured on Deno 2.9.6 (a fetch to a local server started before a 300 ms run of resolved
 * promises, yielding every 5 ms): `setImmediate` and a `MessageChannel` message resolve without
 * polling sockets (the fetch still ended after 300 ms); `setTimeout(0)` lets them run but, called
 * again from the code it resumed, is held back 4 ms each time (nested timers are clamped) — most
 * of a 5 ms slice; an operation that completes off the JavaScript thread, as `crypto.subtle`'s
 * digest does, comes back through the same polling as sockets: about 70 µs a turn, and the fetch
 * ended after 41 ms.
 * @module
 */

const EMPTY = new Uint8Array(0);

/** Resolves after one turn of the event loop in which pending I/O is polled. */
export async function yieldToEventLoop(): Promise<void> {
  await crypto.subtle.digest("SHA-1", EMPTY);
}

/**
 * Yields to the event loop once per `sliceMs` of work shared by several workers: each calls
 * {@link take} between items. Once the slice is used up, every worker that calls it waits for the
 * turn (one worker still running resolved promises would hold the loop as before) until the first
 * of them is back, which starts the next slice.
 *
 * A slice counts only time in which the loop did not turn. A zero-delay timer armed when a slice
 * begins fires once the loop has turned by itself (its timers are run in the same pass that polls
 * I/O); from then on the next {@link take} starts a new slice without a turn of its own. Work that
 * waits on I/O between items (deletions, each a request to the apiserver) would otherwise pay for a
 * turn on every item: 40 s of a deletion of 10,000 pods, profiled, spent 1.7 s of its 16 s of CPU
 * there (bench/reports/why.md, tenth round).
 */
export class Slicer {
  #sliceMs: number;
  #sliceStart = performance.now();
  #turned = false;
  #marker: ReturnType<typeof setTimeout> | undefined;

  constructor(sliceMs: number) {
    this.#sliceMs = sliceMs;
  }

  /** Undefined while the slice lasts (go on); else resolves after a turn of the event loop. */
  take(): Promise<void> | undefined {
    if (this.#turned) {
      this.#begin();
      return undefined;
    }
    if (performance.now() - this.#sliceStart < this.#sliceMs) return undefined;
    return yieldToEventLoop().then(() => this.#begin());
  }

  /** Clears the timer of the current slice; a later {@link take} arms a new one. */
  stop(): void {
    clearTimeout(this.#marker);
    this.#marker = undefined;
  }

  #begin(): void {
    this.#sliceStart = performance.now();
    this.#turned = false;
    // A marker of an earlier slice may fire for a turn before this one began: armed anew.
    clearTimeout(this.#marker);
    const marker = setTimeout(() => {
      this.#marker = undefined;
      this.#turned = true;
    }, 0);
    // A marker never keeps the process alive.
    Deno.unrefTimer(marker);
    this.#marker = marker;
  }
}
