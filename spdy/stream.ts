/**
 * One SPDY stream: a readable side fed by the session's reader and a writable side that sends
 * DATA frames, each half-closed on its own with FLAG_FIN, or both ended by RST_STREAM.
 * Created only by `SpdySession`.
 * @module
 */
import { encodeFrame, RstStatus } from "./frames.ts";
import type { SpdyHeaders } from "./headers.ts";
import { SpdyStreamError } from "./errors.ts";

/** What a stream needs from its session. */
export interface SpdyStreamHost {
  /** Queues an encoded frame; resolves once the transport accepted it. */
  send(bytes: Uint8Array): Promise<void>;
  /** Sends SYN_REPLY with these headers. */
  sendReply(streamId: number, headers: SpdyHeaders, fin: boolean): Promise<void>;
  /** Sends RST_STREAM without waiting. */
  sendReset(streamId: number, status: number): void;
  /** The stream finished in both directions or was reset; forget it. */
  streamDone(stream: SpdyStream): void;
  /** Bytes from the peer now buffered (positive) or handed to the reader or dropped (negative). */
  buffered(delta: number): void;
  readonly maxWriteFrame: number;
  readonly highWaterMark: number;
  readonly windowUpdates: boolean;
}

/** Which side opened a stream. */
export type SpdyStreamOrigin = "local" | "remote";

const WINDOW_UPDATE_STEP = 32 * 1024;

/** A bidirectional SPDY stream. */
export class SpdyStream {
  /** The stream id (odd when the client opened it, even for the server). */
  readonly id: number;
  /** Headers of the SYN_STREAM that opened the stream. */
  readonly headers: SpdyHeaders;
  readonly origin: SpdyStreamOrigin;
  /** Data from the peer; closes on the peer's FIN, errors with {@link SpdyStreamError}. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Data to the peer; `close()` sends FIN, `abort()` resets the stream. */
  readonly writable: WritableStream<Uint8Array>;
  /** Resolves when both directions have finished or the stream was reset; never rejects. */
  readonly closed: Promise<void>;

  readonly #host: SpdyStreamHost;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #replied: boolean;
  #replyWaiter = Promise.withResolvers<SpdyHeaders>();
  #room?: PromiseWithResolvers<void>;
  /** Peer data not yet read: kept here, not in the ReadableStream, so it can be counted. */
  #queue: Uint8Array[] = [];
  #queuedBytes = 0;
  /** A read waiting for data. */
  #pullWaiting?: PromiseWithResolvers<void>;
  #localFin = false;
  #remoteFin = false;
  #readCancelled = false;
  #failure?: SpdyStreamError;
  #received = 0;
  #acknowledged = 0;
  #resolveClosed!: () => void;

  /** @internal Use `SpdySession.openStream` or `SpdySession.accept`. */
  constructor(host: SpdyStreamHost, id: number, headers: SpdyHeaders, origin: SpdyStreamOrigin) {
    this.#host = host;
    this.id = id;
    this.headers = headers;
    this.origin = origin;
    this.#replied = false;
    this.#replyWaiter.promise.catch(() => {});
    this.closed = new Promise((resolve) => this.#resolveClosed = resolve);
    this.readable = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: () => this.#onPull(),
      cancel: () => {
        this.#readCancelled = true;
        this.#dropQueue();
        this.#wake();
      },
    }, { highWaterMark: 0 });
    this.writable = new WritableStream<Uint8Array>({
      write: (chunk) => this.#write(chunk),
      close: () => this.closeWrite(),
      abort: () => this.reset(RstStatus.cancel),
    });
  }

  /** True once this side has sent FIN (or may not send at all). */
  get localFinished(): boolean {
    return this.#localFin;
  }

  /** True once the peer has sent FIN. */
  get remoteFinished(): boolean {
    return this.#remoteFin;
  }

  /** Why the stream failed, if it did. */
  get error(): SpdyStreamError | undefined {
    return this.#failure;
  }

  /** Accepts a peer-opened stream with SYN_REPLY. Kubernetes peers send no reply headers. */
  async reply(headers: SpdyHeaders = {}): Promise<void> {
    if (this.origin !== "remote") throw new TypeError("Only a peer-opened stream is replied to");
    if (this.#replied) return;
    if (this.#failure) throw this.#failure;
    this.#replied = true;
    await this.#host.sendReply(this.id, headers, false);
  }

  /** Ends both directions at once with RST_STREAM (CANCEL unless told otherwise). */
  reset(status: number = RstStatus.cancel): void {
    if (this.#failure || (this.#localFin && this.#remoteFin)) return;
    this.#host.sendReset(this.id, status);
    // Whatever the peer sent and nobody read is abandoned with the stream.
    if (this.#remoteFin && !this.#readCancelled) {
      this.#dropQueue();
      this.#closeReadable();
    }
    this.#fail(
      new SpdyStreamError("reset_locally", this.id, `Stream ${this.id} was reset`, status),
    );
  }

  /** @internal Resolves with the peer's SYN_REPLY headers; rejects if the stream fails first. */
  waitForReply(): Promise<SpdyHeaders> {
    return this.#replyWaiter.promise;
  }

  /** @internal The peer's SYN_REPLY arrived. */
  replyReceived(headers: SpdyHeaders, fin: boolean): void {
    if (this.origin !== "local" || this.#replied) return;
    this.#replied = true;
    this.#replyWaiter.resolve(headers);
    if (fin) this.markRemoteFinished();
  }

  /** @internal Marks the sending side finished without a frame (UNIDIRECTIONAL streams). */
  markLocalFinished(): void {
    this.#localFin = true;
    this.#maybeDone();
  }

  /**
   * @internal Queues peer data. Resolves when there is room for more, so the session's reader
   * pauses while this stream's buffer is full (back-pressure reaches the peer through TCP).
   */
  deliver(data: Uint8Array): Promise<void> | undefined {
    if (this.#remoteFin || this.#failure) return;
    this.#received += data.length;
    if (this.#readCancelled || data.length === 0) return;
    if (this.#pullWaiting && this.#queue.length === 0) {
      // A read is waiting: hand the data over without buffering it.
      this.#controller.enqueue(data);
      this.#pullWaiting.resolve();
      this.#pullWaiting = undefined;
      this.#acknowledge();
      return;
    }
    this.#queue.push(data);
    this.#queuedBytes += data.length;
    this.#host.buffered(data.length);
    if (this.#queuedBytes < this.#host.highWaterMark) return;
    this.#room ??= Promise.withResolvers<void>();
    return this.#room.promise;
  }

  /** Bytes received and not yet read. */
  get bufferedBytes(): number {
    return this.#queuedBytes;
  }

  /** @internal The peer sent FIN. */
  markRemoteFinished(): void {
    if (this.#remoteFin || this.#failure) return;
    this.#remoteFin = true;
    // Data still queued is read first; the last pull closes the readable.
    if (!this.#readCancelled && this.#queue.length === 0) this.#closeReadable();
    this.#wake();
    this.#maybeDone();
  }

  /** @internal The peer sent RST_STREAM, or the connection went away. */
  failed(error: SpdyStreamError): void {
    if (this.#failure || (this.#localFin && this.#remoteFin)) return;
    this.#fail(error);
  }

  #fail(error: SpdyStreamError): void {
    this.#failure = error;
    this.#replyWaiter.reject(error);
    if (!this.#remoteFin && !this.#readCancelled) {
      this.#controller.error(error);
      this.#dropQueue();
      this.#pullWaiting?.resolve();
      this.#pullWaiting = undefined;
    }
    this.#remoteFin = true;
    this.#localFin = true;
    this.#wake();
    this.#done();
  }

  #closeReadable(): undefined {
    try {
      this.#controller.close();
    } catch {
      // Already closed or errored.
    }
    this.#pullWaiting?.resolve();
    this.#pullWaiting = undefined;
  }

  /** Forgets unread data (the reader cancelled, or the stream failed). */
  #dropQueue(): void {
    if (this.#queuedBytes > 0) this.#host.buffered(-this.#queuedBytes);
    this.#queue = [];
    this.#queuedBytes = 0;
  }

  #wake(): void {
    this.#room?.resolve();
    this.#room = undefined;
  }

  #onPull(): Promise<void> | undefined {
    const chunk = this.#queue.shift();
    if (!chunk) {
      if (this.#remoteFin) return this.#closeReadable();
      this.#pullWaiting = Promise.withResolvers<void>();
      return this.#pullWaiting.promise;
    }
    this.#queuedBytes -= chunk.length;
    this.#host.buffered(-chunk.length);
    this.#controller.enqueue(chunk);
    if (this.#queue.length === 0 && this.#remoteFin) this.#closeReadable();
    if (this.#queuedBytes < this.#host.highWaterMark) this.#wake();
    this.#acknowledge();
  }

  /**
   * Flow-controlled SPDY/3 peers need WINDOW_UPDATE for what was read to keep sending;
   * spdystream ignores it.
   */
  #acknowledge(): void {
    if (!this.#host.windowUpdates || this.#remoteFin) return;
    const consumed = this.#received - this.#queuedBytes;
    if (consumed - this.#acknowledged >= WINDOW_UPDATE_STEP) {
      const delta = consumed - this.#acknowledged;
      this.#acknowledged = consumed;
      this.#host.send(encodeFrame({ type: "window_update", streamId: this.id, delta }))
        .catch(() => {});
    }
  }

  async #write(chunk: Uint8Array): Promise<void> {
    if (this.#failure) throw this.#failure;
    if (this.#localFin) throw new TypeError(`Stream ${this.id} is already closed for writing`);
    // spdystream drops DATA that arrives before the stream's SYN_REPLY; reply first.
    if (this.origin === "remote" && !this.#replied) await this.reply();
    const step = this.#host.maxWriteFrame;
    for (let at = 0; at < chunk.length; at += step) {
      if (this.#failure) throw this.#failure;
      const data = chunk.subarray(at, Math.min(at + step, chunk.length));
      await this.#host.send(encodeFrame({ type: "data", streamId: this.id, fin: false, data }));
    }
  }

  /**
   * Half-closes this side (DATA with FIN) whether or not `writable` is locked by a writer; a
   * later write fails. Used to end output a provider may still hold.
   */
  async closeWrite(): Promise<void> {
    if (this.#failure) throw this.#failure;
    if (this.#localFin) return;
    if (this.origin === "remote" && !this.#replied) await this.reply();
    this.#localFin = true;
    // An empty DATA frame with FIN is how Go half-closes (spdystream stream.go : Close).
    await this.#host.send(
      encodeFrame({ type: "data", streamId: this.id, fin: true, data: new Uint8Array(0) }),
    );
    this.#maybeDone();
  }

  #maybeDone(): void {
    if (this.#localFin && this.#remoteFin) this.#done();
  }

  #done(): void {
    this.#resolveClosed();
    this.#host.streamDone(this);
  }
}
