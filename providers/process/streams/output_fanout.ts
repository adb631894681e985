/**
 * Live output of one container instance for attach sessions: the FIFO pumps publish every
 * chunk they read, each session subscribes from then on (as the kubelet's attach only sees
 * output produced after it attached; containerd internal/cri/io/container_io.go `Attach` adds
 * the session to the instance's stdout/stderr broadcast groups). A session that falls more
 * than {@link OutputFanoutOptions.maxBufferedBytes} behind is ended rather than allowed to hold
 * up the pumps and with them the container's log.
 * @module
 */

/** One chunk of output and the stream it came from. */
export interface OutputChunk {
  stream: "stdout" | "stderr";
  data: Uint8Array;
}

/** Options for {@link OutputFanout.subscribe}. */
export interface SubscribeOptions {
  /** Ends the subscription (its stream closes). */
  signal?: AbortSignal;
  /** Buffered bytes after which a slow subscriber is cut off; default 1 MiB. */
  maxBufferedBytes?: number;
}

/** Thrown into a subscription that fell too far behind. */
export class SlowSubscriberError extends Error {
  override name = "SlowSubscriberError";
}

/** Broadcasts an instance's output to the attach sessions subscribed at the time. */
export class OutputFanout {
  readonly #subscribers = new Set<ReadableStreamDefaultController<OutputChunk>>();
  #closed = false;

  /** The number of live subscriptions (for tests). */
  get size(): number {
    return this.#subscribers.size;
  }

  /** Output from now on, until the instance ends or `signal` aborts. */
  subscribe(options: SubscribeOptions = {}): ReadableStream<OutputChunk> {
    const max = options.maxBufferedBytes ?? 1024 * 1024;
    let self: ReadableStreamDefaultController<OutputChunk>;
    const stop = () => this.#end(self);
    return new ReadableStream<OutputChunk>({
      start: (controller) => {
        self = controller;
        if (this.#closed || options.signal?.aborted) return controller.close();
        this.#subscribers.add(controller);
        options.signal?.addEventListener("abort", stop, { once: true });
      },
      cancel: () => {
        this.#subscribers.delete(self);
        options.signal?.removeEventListener("abort", stop);
      },
    }, { highWaterMark: max, size: (chunk) => chunk.data.byteLength });
  }

  /** Hands `data` (copied) to every subscriber. */
  publish(stream: "stdout" | "stderr", data: Uint8Array): void {
    if (data.length === 0) return;
    for (const controller of this.#subscribers) {
      controller.enqueue({ stream, data: data.slice() });
      if ((controller.desiredSize ?? 0) < 0) {
        this.#subscribers.delete(controller);
        controller.error(
          new SlowSubscriberError(
            "the attach session fell too far behind the container's output and was ended",
          ),
        );
      }
    }
  }

  /** Ends every subscription; later ones end at once. */
  close(): void {
    this.#closed = true;
    for (const controller of [...this.#subscribers]) this.#end(controller);
  }

  #end(controller: ReadableStreamDefaultController<OutputChunk>): void {
    if (!this.#subscribers.delete(controller)) return;
    try {
      controller.close();
    } catch {
      // already errored
    }
  }
}
