/**
 * The streams of a SPDY session: open streams by id, stream ids for each side, the limits on
 * open and not-yet-accepted streams, and the queue of peer-opened streams waiting for `accept()`.
 * @module
 */
import { SpdyStreamError } from "./errors.ts";
import { RstStatus } from "./frames.ts";
import type { SpdyStream } from "./stream.ts";
import { AcceptQueue } from "./_accept_queue.ts";

/** Limits of {@link SpdyStreamTable}. */
export interface SpdyStreamTableOptions {
  role: "server" | "client";
  maxStreams: number;
  maxPendingAccepts: number;
}

/** Open streams of one connection, and the peer's streams waiting to be accepted. */
export class SpdyStreamTable {
  readonly #streams = new Map<number, SpdyStream>();
  readonly #accepts = new AcceptQueue<SpdyStream>();
  readonly #role: "server" | "client";
  readonly #maxStreams: number;
  readonly #maxPending: number;
  #nextStreamId: number;
  #lastPeerStreamId = 0;

  constructor(options: SpdyStreamTableOptions) {
    this.#role = options.role;
    this.#maxStreams = options.maxStreams;
    this.#maxPending = options.maxPendingAccepts;
    this.#nextStreamId = this.#role === "client" ? 1 : 2;
  }

  /** Open streams. */
  get size(): number {
    return this.#streams.size;
  }

  /** The highest stream id the peer opened, for GOAWAY. */
  get lastPeerStreamId(): number {
    return this.#lastPeerStreamId;
  }

  /** The open stream with this id. */
  get(id: number): SpdyStream | undefined {
    return this.#streams.get(id);
  }

  /** The id for the next stream this side opens. */
  nextLocalId(): number {
    const id = this.#nextStreamId;
    this.#nextStreamId += 2;
    return id;
  }

  /**
   * Whether the peer may open stream `id`: undefined if so, else the RST_STREAM status to answer
   * with (an id of the wrong parity or not increasing, or `refuse`, or too many streams).
   */
  admitPeer(id: number, refuse: boolean): number | undefined {
    const peerParity = this.#role === "server" ? 1 : 0;
    if ((id & 1) !== peerParity || id <= this.#lastPeerStreamId) {
      // moby/spdystream connection.go : checkStreamFrame answers PROTOCOL_ERROR the same way.
      return RstStatus.protocolError;
    }
    this.#lastPeerStreamId = id;
    const full = this.#streams.size >= this.#maxStreams ||
      this.#accepts.length >= this.#maxPending;
    if (refuse || full) return RstStatus.refusedStream;
    return undefined;
  }

  /** Records an open stream. */
  add(stream: SpdyStream): void {
    this.#streams.set(stream.id, stream);
  }

  /** Queues a peer-opened stream for `accept()`. */
  queueAccept(stream: SpdyStream): void {
    this.#accepts.push(stream);
  }

  /** The next peer-opened stream, or null once closed (or the signal aborts). */
  accept(signal?: AbortSignal): Promise<SpdyStream | null> {
    return this.#accepts.next(signal);
  }

  /** Forgets a finished stream; one that failed is no longer offered to `accept()`. */
  done(stream: SpdyStream): void {
    if (this.#streams.get(stream.id) === stream) this.#streams.delete(stream.id);
    if (stream.error) this.#accepts.remove(stream);
  }

  /** Fails every open stream, resets the unaccepted ones; `accept()` answers null from now on. */
  closeAll(): void {
    for (const stream of [...this.#streams.values()]) {
      stream.failed(
        new SpdyStreamError(
          "connection_closed",
          stream.id,
          `The SPDY connection closed under stream ${stream.id}`,
        ),
      );
    }
    this.#streams.clear();
    for (const stream of this.#accepts.close()) stream.reset(RstStatus.cancel);
  }
}
