/**
 * The sending side of a SPDY session: frames go out one after another in the order they were
 * queued, header blocks share one compression context, control frames the peer provokes are
 * bounded, and the transport is closed after what was queued went out.
 * @module
 */
import type { Clock } from "../base/clock.ts";
import type { Logger } from "../base/log.ts";
import { SpdyProtocolError, SpdyStreamError } from "./errors.ts";
import { encodeFrame, type SpdyFrame } from "./frames.ts";
import { SpdyHeaderCompressor, type SpdyHeaders } from "./headers.ts";
import type { ByteDuplex } from "./byte_duplex.ts";

const MAX_QUEUED_CONTROL = 256;

/** What {@link SpdyWriter} needs from its session. */
export interface SpdyWriterDeps {
  duplex: ByteDuplex;
  clock: Clock;
  log: Logger;
  /** True once the session has ended; nothing more is queued then. */
  isEnded: () => boolean;
  /**
   * Ends the session abruptly for `err`: a failed write (`replace` false: an earlier error
   * stands) or a control-frame flood (`replace` true).
   */
  fail: (err: Error, replace: boolean) => void;
}

/** Ordered frame writes over the session's transport. */
export class SpdyWriter {
  /** Resolves once the transport is closed. */
  readonly transportClosed: Promise<void>;
  readonly #deps: SpdyWriterDeps;
  readonly #compressor = new SpdyHeaderCompressor();
  readonly #closed = Promise.withResolvers<void>();
  #chain: Promise<void> = Promise.resolve();
  #queuedControl = 0;
  #transportGone = false;

  constructor(deps: SpdyWriterDeps) {
    this.#deps = deps;
    this.transportClosed = this.#closed.promise;
  }

  /** Compresses a header block in the connection's one compression context. */
  compress(headers: SpdyHeaders): Uint8Array {
    return this.#compressor.compress(headers);
  }

  /** Queues encoded bytes; resolves once the transport accepted them. */
  send(bytes: Uint8Array): Promise<void> {
    if (this.#deps.isEnded()) {
      return Promise.reject(
        new SpdyStreamError("connection_closed", 0, "The SPDY connection is closed"),
      );
    }
    const written = this.#chain.then(() => {
      if (this.#transportGone) {
        throw new SpdyStreamError("connection_closed", 0, "The SPDY connection is closed");
      }
      return this.#deps.duplex.write(bytes);
    });
    this.#chain = written.catch((err) => {
      if (!this.#deps.isEnded()) {
        this.#deps.fail(err instanceof Error ? err : new Error(String(err)), false);
      }
    });
    return written;
  }

  /** Sends SYN_REPLY with these headers. */
  sendHeaders(kind: "syn_reply", streamId: number, headers: SpdyHeaders, fin: boolean) {
    const headerBlock = this.#compressor.compress(headers);
    return this.send(encodeFrame({ type: kind, streamId, fin, headerBlock }));
  }

  /** Queues a control frame without waiting; a peer that floods them loses the connection. */
  sendControl(frame: SpdyFrame): void {
    if (this.#deps.isEnded()) return;
    if (this.#queuedControl >= MAX_QUEUED_CONTROL) {
      this.#deps.fail(
        new SpdyProtocolError(
          "flood",
          "The peer provoked control frames faster than it read them",
        ),
        true,
      );
      return;
    }
    this.#queuedControl++;
    this.send(encodeFrame(frame)).catch(() => {}).finally(() => this.#queuedControl--);
  }

  /** Closes the transport after queued frames (a last GOAWAY, FINs) went out, within 2 s. */
  async closeTransport(abrupt: boolean): Promise<void> {
    if (!abrupt) {
      const stop = new AbortController();
      await Promise.race([this.#chain, this.#deps.clock.sleep(2000, stop.signal).catch(() => {})]);
      stop.abort();
    }
    this.#transportGone = true;
    try {
      this.#deps.duplex.close();
    } catch (err) {
      this.#deps.log.debug("Closing the SPDY transport failed: {err}", { err });
    }
    this.#closed.resolve();
  }
}
