/**
 * An in-memory {@link KubeRequester} for unit tests of watches and informers: lists answer from
 * a function, and each watch connection is a stream the test writes events into.
 * @module
 */
import type { KubeRequester, Query, RequestOptions } from "../../k8s/request.ts";

/** One open watch connection, driven by the test. */
export class FakeWatch {
  readonly query: Query;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  readonly stream: ReadableStream<Uint8Array>;
  #encoder = new TextEncoder();
  #closed = false;

  constructor(query: Query, signal?: AbortSignal) {
    this.query = query;
    this.stream = new ReadableStream({
      start: (c) => {
        this.#controller = c;
      },
      cancel: () => {
        this.#closed = true;
      },
    });
    signal?.addEventListener("abort", () => this.fail(signal.reason), { once: true });
  }

  /** Sends raw text (to test framing). */
  sendText(text: string): void {
    if (!this.#closed) this.#controller.enqueue(this.#encoder.encode(text));
  }

  send(type: string, object: unknown): void {
    this.sendText(`${JSON.stringify({ type, object })}\n`);
  }

  /** Ends the connection the way an apiserver timeout does. */
  end(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#controller.close();
  }

  /** Breaks the connection. */
  fail(err: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#controller.error(err);
  }
}

/** Answers list requests with {@link FakeRequester.onList} and hands watches to the test. */
export class FakeRequester implements KubeRequester {
  lists: Query[] = [];
  watches: FakeWatch[] = [];
  onList: (query: Query) => unknown = () => ({ items: [], metadata: { resourceVersion: "1" } });
  /** When set, the next watch request fails with this error instead of connecting. */
  failNextWatch?: unknown;
  #waiters: ((w: FakeWatch) => void)[] = [];

  // deno-lint-ignore no-explicit-any
  request(options: RequestOptions & { stream?: boolean }): Promise<any> {
    const query = options.query ?? {};
    if (options.stream) {
      if (this.failNextWatch !== undefined) {
        const err = this.failNextWatch;
        this.failNextWatch = undefined;
        return Promise.reject(err);
      }
      const watch = new FakeWatch(query, options.signal);
      this.watches.push(watch);
      this.#waiters.shift()?.(watch);
      return Promise.resolve(watch.stream);
    }
    this.lists.push(query);
    try {
      return Promise.resolve(structuredClone(this.onList(query)));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Resolves with the next watch connection opened (or one already open and not yet taken). */
  nextWatch(taken = 0): Promise<FakeWatch> {
    if (this.watches.length > taken) return Promise.resolve(this.watches[taken]);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

/** A minimal pod-like object. */
export function obj(name: string, resourceVersion: string, extra: Record<string, unknown> = {}) {
  return { metadata: { name, namespace: "ns", resourceVersion, ...extra } };
}
