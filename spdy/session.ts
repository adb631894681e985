/**
 * A SPDY/3.1 connection over any byte duplex, as Kubernetes peers use it (moby/spdystream
 * `connection.go`): the client opens odd streams, the server even; every stream is answered
 * with SYN_REPLY; PINGs are echoed; there is NO flow control on the sending side, because
 * spdystream never sends WINDOW_UPDATE. Malformed input closes this connection, nothing else.
 * @module
 */
import { type Clock, realClock } from "../base/clock.ts";
import { getLogger, type Logger } from "../base/log.ts";
import { SpdyProtocolError, SpdyStreamError } from "./errors.ts";
import { encodeFrame, GoAwayStatus, RstStatus, type SpdyFrame } from "./frames.ts";
import { SpdyFrameParser, type SpdyFrameParserOptions } from "./frame_parser.ts";
import { SpdyHeaderDecompressor, type SpdyHeaderLimits, type SpdyHeaders } from "./headers.ts";
import { SpdyStream, type SpdyStreamHost } from "./stream.ts";
import type { ByteDuplex, SignalOptions } from "./byte_duplex.ts";
import { deadline } from "../base/deadline.ts";
import { SpdyStreamTable } from "./_stream_table.ts";
import { SpdyWriter } from "./_writer.ts";

export type { ByteDuplex, SignalOptions };

/** Options for {@link SpdySession}. */
export interface SpdySessionOptions {
  /** "server" (kubelet: accepts odd streams, opens even) or "client". */
  role: "server" | "client";
  frameLimits?: SpdyFrameParserOptions;
  headerLimits?: SpdyHeaderLimits;
  /** Open streams allowed at once; more are refused. Default 1000. */
  maxStreams?: number;
  /** Peer-opened streams waiting for `accept()`; more are refused. Default 100. */
  maxPendingAccepts?: number;
  /** Bytes buffered per stream before the reader pauses the connection. Default 1 MiB. */
  streamHighWaterMark?: number;
  /**
   * Bytes buffered across all streams before the reader pauses the connection, so that many
   * streams each just under their own mark cannot pile up memory. Default 8 MiB.
   */
  maxBufferedBytes?: number;
  /** Largest DATA payload this side sends per frame. Default 32 KiB. */
  maxWriteFrame?: number;
  /** Send WINDOW_UPDATE as data is consumed, for flow-controlled peers. Default true. */
  windowUpdates?: boolean;
  /** How long `openStream` waits for SYN_REPLY. Default 30 s, as spdystream's client. */
  replyTimeoutMs?: number;
  clock?: Clock;
  log?: Logger;
}

/** One SPDY/3.1 connection. Reading starts at construction. */
export class SpdySession {
  readonly role: "server" | "client";
  /** Resolves once the connection is closed and every stream has ended; never rejects. */
  readonly closed: Promise<void>;

  readonly #duplex: ByteDuplex;
  readonly #parser: SpdyFrameParser;
  readonly #decompressor: SpdyHeaderDecompressor;
  readonly #writer: SpdyWriter;
  readonly #streams: SpdyStreamTable;
  readonly #pings = new Map<number, () => void>();
  readonly #host: SpdyStreamHost;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #replyTimeoutMs: number;
  #nextPingId: number;
  #goAwaySent = false;
  #goAwayReceived = false;
  #ended = false;
  #error?: Error;
  #reader?: ReadableStreamDefaultReader<Uint8Array>;
  #readLoopDone: Promise<void>;
  readonly #maxBuffered: number;
  #buffered = 0;
  #bufferRoom?: PromiseWithResolvers<void>;

  constructor(duplex: ByteDuplex, options: SpdySessionOptions) {
    this.role = options.role;
    this.#duplex = duplex;
    this.#parser = new SpdyFrameParser(options.frameLimits);
    this.#decompressor = new SpdyHeaderDecompressor(options.headerLimits);
    this.#clock = options.clock ?? realClock;
    this.#log = options.log ?? getLogger(["vkubelet", "spdy"]);
    this.#replyTimeoutMs = options.replyTimeoutMs ?? 30_000;
    this.#nextPingId = this.role === "client" ? 1 : 2;
    this.#maxBuffered = options.maxBufferedBytes ?? 8 << 20;
    this.#streams = new SpdyStreamTable({
      role: this.role,
      maxStreams: options.maxStreams ?? 1000,
      maxPendingAccepts: options.maxPendingAccepts ?? 100,
    });
    const writer = this.#writer = new SpdyWriter({
      duplex,
      clock: this.#clock,
      log: this.#log,
      isEnded: () => this.#ended,
      fail: (err, replace) => {
        if (replace) this.#error = err;
        else this.#error ??= err;
        this.#terminate(true);
      },
    });
    this.#host = {
      send: (bytes) => writer.send(bytes),
      sendReply: (id, headers, fin) => writer.sendHeaders("syn_reply", id, headers, fin),
      sendReset: (id, status) => writer.sendControl({ type: "rst_stream", streamId: id, status }),
      streamDone: (stream) => this.#streams.done(stream),
      buffered: (delta) => {
        this.#buffered += delta;
        if (this.#buffered < this.#maxBuffered) this.#wakeBufferRoom();
      },
      maxWriteFrame: options.maxWriteFrame ?? 32 * 1024,
      highWaterMark: options.streamHighWaterMark ?? 1 << 20,
      windowUpdates: options.windowUpdates ?? true,
    };
    this.#readLoopDone = this.#readLoop();
    this.closed = Promise.all([this.#readLoopDone, writer.transportClosed]).then(() => {});
  }

  /** Why the connection closed abnormally (a protocol error or transport failure), if it did. */
  get error(): Error | undefined {
    return this.#error;
  }

  /** True once the transport is closed. */
  get isClosed(): boolean {
    return this.#ended;
  }

  /** Bytes received on all streams and not yet read (at most `maxBufferedBytes` + one frame). */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  /** Open streams (not yet finished in both directions). */
  get streamCount(): number {
    return this.#streams.size;
  }

  /** The next peer-opened stream, or null once the connection is closed (or the signal aborts). */
  accept(options: SignalOptions = {}): Promise<SpdyStream | null> {
    return this.#streams.accept(options.signal);
  }

  /** Opens a stream (SYN_STREAM) and waits for the peer's SYN_REPLY. */
  async openStream(headers: SpdyHeaders, options: SignalOptions = {}): Promise<SpdyStream> {
    if (this.#ended || this.#goAwaySent || this.#goAwayReceived) {
      throw new SpdyStreamError("refused", 0, "The SPDY connection is closing; no new streams");
    }
    const id = this.#streams.nextLocalId();
    const stream = new SpdyStream(this.#host, id, headers, "local");
    this.#streams.add(stream);
    const block = this.#writer.compress(headers);
    await this.#writer.send(encodeFrame({
      type: "syn_stream",
      streamId: id,
      associatedToStreamId: 0,
      priority: 0,
      slot: 0,
      fin: false,
      unidirectional: false,
      headerBlock: block,
    }));
    const limit = deadline(this.#clock, this.#replyTimeoutMs, options.signal);
    const gaveUp = new Promise<string>((resolve) => {
      limit.signal.addEventListener("abort", () => resolve("timeout or abort"), { once: true });
    });
    try {
      const outcome = await Promise.race([stream.waitForReply().then(() => "replied"), gaveUp]);
      if (outcome !== "replied") {
        stream.reset(RstStatus.cancel);
        throw new SpdyStreamError("refused", id, `Stream ${id} got no SYN_REPLY (${outcome})`);
      }
      return stream;
    } finally {
      limit.cancel();
    }
  }

  /** Sends PING and resolves with the round-trip time in milliseconds. */
  async ping(options: SignalOptions = {}): Promise<number> {
    if (this.#ended) throw new SpdyStreamError("connection_closed", 0, "The connection is closed");
    const id = this.#nextPingId;
    this.#nextPingId = (this.#nextPingId + 2) >>> 0;
    const started = this.#clock.now();
    const echoed = new Promise<void>((resolve) => this.#pings.set(id, resolve));
    await this.#writer.send(encodeFrame({ type: "ping", id }));
    const aborted = new Promise<void>((_, reject) => {
      options.signal?.addEventListener("abort", () => reject(options.signal!.reason), {
        once: true,
      });
    });
    try {
      await Promise.race([echoed, aborted]);
    } finally {
      this.#pings.delete(id);
    }
    if (this.#ended) throw new SpdyStreamError("connection_closed", 0, "The connection closed");
    return this.#clock.now() - started;
  }

  /** Sends GOAWAY: the peer must open no more streams. Open streams carry on. */
  async goAway(status: number = GoAwayStatus.ok): Promise<void> {
    if (this.#goAwaySent || this.#ended) return;
    this.#goAwaySent = true;
    await this.#writer.send(encodeFrame({
      type: "goaway",
      lastGoodStreamId: this.#streams.lastPeerStreamId,
      status,
    })).catch(() => {});
  }

  /**
   * Graceful close: GOAWAY, then wait until every stream has finished and the peer has closed
   * the connection, or `timeoutMs` (default 10 s) passes; then close. Output written before
   * this call is not cut off, which a reset-everything close would risk.
   */
  async shutdown(options: SignalOptions & { timeoutMs?: number } = {}): Promise<void> {
    await this.goAway();
    const stop = new AbortController();
    const signal = AbortSignal.any([stop.signal, ...(options.signal ? [options.signal] : [])]);
    try {
      await Promise.race([
        this.closed,
        this.#clock.sleep(options.timeoutMs ?? 10_000, signal).catch(() => {}),
      ]);
    } finally {
      stop.abort();
    }
    this.close();
    await this.closed;
  }

  /** Closes the connection now; streams that have not finished fail with `connection_closed`. */
  close(): void {
    this.#terminate(false);
  }

  async #readLoop(): Promise<void> {
    const reader = this.#duplex.readable.getReader();
    this.#reader = reader;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || this.#ended) break;
        for (const frame of this.#parser.push(value)) {
          await this.#handle(frame);
          if (this.#ended) break;
        }
      }
      if (!this.#ended) this.#parser.finish();
    } catch (err) {
      if (!this.#ended) await this.#protocolFailure(err);
    } finally {
      this.#terminate(this.#error !== undefined);
      await reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }

  async #protocolFailure(err: unknown): Promise<void> {
    this.#error = err instanceof Error ? err : new Error(String(err));
    if (err instanceof SpdyProtocolError) {
      this.#log.warn("Closing a SPDY connection after a protocol error: {message}", {
        message: err.message,
        code: err.code,
      });
      // Best effort: tell the peer why, but never wait long for a hostile peer to read it.
      if (!this.#goAwaySent) {
        this.#goAwaySent = true;
        const goAway = this.#writer.send(encodeFrame({
          type: "goaway",
          lastGoodStreamId: this.#streams.lastPeerStreamId,
          status: GoAwayStatus.protocolError,
        })).catch(() => {});
        const stop = new AbortController();
        await Promise.race([goAway, this.#clock.sleep(1000, stop.signal).catch(() => {})]);
        stop.abort();
      }
    }
  }

  async #handle(frame: SpdyFrame): Promise<void> {
    switch (frame.type) {
      case "data": {
        const stream = this.#streams.get(frame.streamId);
        // Frames for finished or unknown streams are dropped, as spdystream does.
        if (!stream) return;
        const room = stream.deliver(frame.data);
        if (frame.fin) stream.markRemoteFinished();
        else if (room) await room;
        // The connection's budget: stop reading until the streams' readers catch up.
        if (this.#buffered >= this.#maxBuffered && !this.#ended) {
          this.#bufferRoom ??= Promise.withResolvers<void>();
          await this.#bufferRoom.promise;
        }
        return;
      }
      case "syn_stream":
        return this.#onSynStream(frame);
      case "syn_reply": {
        const headers = this.#decompressor.decompress(frame.headerBlock);
        this.#streams.get(frame.streamId)?.replyReceived(headers, frame.fin);
        return;
      }
      case "headers": {
        this.#decompressor.decompress(frame.headerBlock);
        if (frame.fin) this.#streams.get(frame.streamId)?.markRemoteFinished();
        return;
      }
      case "rst_stream":
        this.#streams.get(frame.streamId)?.failed(
          new SpdyStreamError(
            "reset_by_peer",
            frame.streamId,
            `The peer reset stream ${frame.streamId} (status ${frame.status})`,
            frame.status,
          ),
        );
        return;
      case "ping":
        if ((frame.id & 1) === (this.#nextPingId & 1)) this.#pings.get(frame.id)?.();
        else this.#writer.sendControl(frame);
        return;
      case "goaway":
        this.#goAwayReceived = true;
        return;
      case "settings":
      case "window_update":
        // Accepted and ignored: sending never waits for a window (spdystream sends none).
        return;
    }
  }

  #onSynStream(frame: Extract<SpdyFrame, { type: "syn_stream" }>): void {
    // Always inflate, even for refused streams: the compression context spans the connection.
    const headers = this.#decompressor.decompress(frame.headerBlock);
    const id = frame.streamId;
    const refusal = this.#streams.admitPeer(id, this.#goAwaySent);
    if (refusal !== undefined) {
      this.#writer.sendControl({ type: "rst_stream", streamId: id, status: refusal });
      return;
    }
    const stream = new SpdyStream(this.#host, id, headers, "remote");
    this.#streams.add(stream);
    if (frame.unidirectional) stream.markLocalFinished();
    if (frame.fin) stream.markRemoteFinished();
    this.#streams.queueAccept(stream);
  }

  #wakeBufferRoom(): void {
    this.#bufferRoom?.resolve();
    this.#bufferRoom = undefined;
  }

  /** Ends the connection once; `abrupt` drops frames still queued instead of flushing them. */
  #terminate(abrupt: boolean): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#streams.closeAll();
    this.#wakeBufferRoom();
    for (const resolve of this.#pings.values()) resolve();
    this.#pings.clear();
    this.#reader?.cancel().catch(() => {});
    this.#writer.closeTransport(abrupt);
  }
}
