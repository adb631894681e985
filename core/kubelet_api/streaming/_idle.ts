/**
 * The stream idle timeout (`--stream-idle-timeout`): a connection that carries no bytes in
 * either direction for that long is closed. Any bytes count, PINGs included, as moby/spdystream
 * `connection.go : idleAwareFramer` resets its timer on every frame read.
 * @module
 */
import type { Clock } from "../../../base/clock.ts";
import type { ByteDuplex } from "../../../spdy/byte_duplex.ts";

/** Calls `onIdle` once when {@link IdleWatch.touch} was not called for `timeoutMs`. */
export class IdleWatch {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #stop = new AbortController();
  #last: number;

  /** A `timeoutMs` of 0 or less (or not finite) disables the watch. */
  constructor(clock: Clock, timeoutMs: number, onIdle: () => void) {
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
    this.#last = clock.now();
    if (timeoutMs > 0 && Number.isFinite(timeoutMs)) void this.#watch(onIdle);
  }

  /** Records activity now. Cheap: called for every chunk. */
  touch(): void {
    this.#last = this.#clock.now();
  }

  /** Stops watching; releases the timer. */
  stop(): void {
    this.#stop.abort();
  }

  async #watch(onIdle: () => void): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      const wait = this.#last + this.#timeoutMs - this.#clock.now();
      if (wait <= 0) {
        this.#stop.abort();
        onIdle();
        return;
      }
      try {
        await this.#clock.sleep(wait, signal);
      } catch {
        return;
      }
    }
  }
}

/** Wraps `duplex` so that every chunk read or written calls `touch`. */
export function touchingDuplex(duplex: ByteDuplex, touch: () => void): ByteDuplex {
  const reader = duplex.readable.getReader();
  const readable = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await reader.read();
      if (next.done) return controller.close();
      touch();
      controller.enqueue(next.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return {
    readable,
    write(bytes) {
      touch();
      return duplex.write(bytes);
    },
    close() {
      duplex.close();
    },
  };
}
