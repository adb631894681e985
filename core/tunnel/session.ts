/**
 * A yamux session (hashicorp/yamux spec.md) over any byte duplex: both ends open streams
 * (the client odd ids, the server even), each with its own credit window (256 KiB, topped up
 * by window-update frames as the reader consumes, so a slow reader stalls only its own stream),
 * half-close by FIN, reset by RST, pings, and go-away. A malformed frame ends the session with a
 * {@link TunnelProtocolError} in {@link MuxSession.closed} and go-away(protocol error) to the peer;
 * nothing is thrown into the event loop.
 * @module
 */
import type { ByteDuplex } from "../../spdy/byte_duplex.ts";
import {
  encodeFrame,
  Flag,
  type Frame,
  FrameParser,
  FrameType,
  GoAwayCode,
  TunnelProtocolError,
} from "./frame.ts";
import { MuxStream } from "./stream.ts";

export { MuxStream };

/** yamux's initial stream window. */
export const INITIAL_WINDOW = 256 * 1024;
/** Largest data frame this end sends. */
const MAX_SEND_FRAME = 64 * 1024;

/** Options for {@link MuxSession}. */
export interface MuxSessionOptions {
  /** The dialing end (odd stream ids); the accepting end is false. */
  client: boolean;
  /** Called with each stream the peer opens. */
  onStream?(stream: MuxStream): void;
  /** Streams the peer may have open at once; one more is reset. Default 1024. */
  maxInboundStreams?: number;
}

/** One multiplexed connection; see the module doc. */
export class MuxSession {
  readonly #transport: ByteDuplex;
  readonly #options: MuxSessionOptions;
  readonly #streams = new Map<number, MuxStream>();
  readonly #parser = new FrameParser(INITIAL_WINDOW);
  readonly #closed = Promise.withResolvers<Error | undefined>();
  readonly #pings = new Map<number, (at: number) => void>();
  #nextId: number;
  #nextPing = 1;
  #writes: Promise<void> = Promise.resolve();
  #ended?: Error | null;
  #peerGoneAway = false;
  #inbound = 0;

  constructor(transport: ByteDuplex, options: MuxSessionOptions) {
    this.#transport = transport;
    this.#options = options;
    this.#nextId = options.client ? 1 : 2;
    void this.#readLoop();
  }

  /** Resolves when the session ends: undefined after a normal close, else why it failed. */
  get closed(): Promise<Error | undefined> {
    return this.#closed.promise;
  }

  /** Streams open now. */
  get streamCount(): number {
    return this.#streams.size;
  }

  /** Opens a stream to the peer. */
  open(): MuxStream {
    if (this.#ended !== undefined) {
      throw new Error(`The tunnel is closed${this.#ended ? `: ${this.#ended.message}` : ""}`);
    }
    if (this.#peerGoneAway) throw new Error("The tunnel's peer takes no new streams (go-away)");
    const id = this.#nextId;
    this.#nextId += 2;
    const stream = this.#newStream(id);
    void this.send(encodeFrame(FrameType.windowUpdate, Flag.syn, id, 0)).catch(() => {});
    return stream;
  }

  /** Round-trip time of one ping, in ms. */
  async ping(): Promise<number> {
    const id = this.#nextPing++ >>> 0;
    const start = performance.now();
    const pong = new Promise<number>((resolve) => this.#pings.set(id, resolve));
    await this.send(encodeFrame(FrameType.ping, Flag.syn, 0, id));
    return (await pong) - start;
  }

  /** Sends go-away (normal) and ends the session and every stream. */
  close(): void {
    if (this.#ended !== undefined) return;
    void this.send(encodeFrame(FrameType.goAway, 0, 0, GoAwayCode.normal)).catch(() => {});
    this.#end(null);
  }

  /** Queues `bytes` behind earlier frames; resolves when the transport takes more. */
  send(bytes: Uint8Array): Promise<void> {
    const write = this.#writes.then(() => {
      if (this.#ended !== undefined && !isGoAway(bytes)) throw new Error("The tunnel is closed");
      return this.#transport.write(bytes);
    });
    this.#writes = write.catch((err) => this.#end(asError(err)));
    return write;
  }

  /** Called by a stream once both halves are done or it was reset. */
  forget(id: number): void {
    if (this.#streams.delete(id) && (id % 2 === 1) !== this.#options.client) this.#inbound--;
  }

  #newStream(id: number): MuxStream {
    const stream = new MuxStream(id, this, { window: INITIAL_WINDOW, maxFrame: MAX_SEND_FRAME });
    this.#streams.set(id, stream);
    return stream;
  }

  async #readLoop(): Promise<void> {
    const reader = this.#transport.readable.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const frame of this.#parser.push(value)) this.#dispatch(frame);
        if (this.#ended !== undefined) break;
      }
      this.#end(this.#ended ?? null);
    } catch (err) {
      if (err instanceof TunnelProtocolError) {
        void this.send(encodeFrame(FrameType.goAway, 0, 0, GoAwayCode.protocolError))
          .catch(() => {});
      }
      this.#end(asError(err));
    } finally {
      reader.releaseLock();
    }
  }

  #dispatch(frame: Frame): void {
    if (frame.type === FrameType.ping) return this.#onPing(frame);
    if (frame.type === FrameType.goAway) return this.#onGoAway(frame);
    if (frame.stream === 0) {
      throw new TunnelProtocolError(`Tunnel frame of type ${frame.type} names stream 0`);
    }
    let stream = this.#streams.get(frame.stream);
    if (frame.flags & Flag.syn) {
      if (stream) throw new TunnelProtocolError(`Tunnel stream ${frame.stream} opened twice`);
      if ((frame.stream % 2 === 1) === this.#options.client) {
        throw new TunnelProtocolError(
          `Tunnel stream ${frame.stream} has this end's parity; the peer must use the other`,
        );
      }
      if (this.#inbound >= (this.#options.maxInboundStreams ?? 1024) || this.#ended) {
        void this.send(encodeFrame(FrameType.windowUpdate, Flag.rst, frame.stream, 0))
          .catch(() => {});
        return;
      }
      this.#inbound++;
      stream = this.#newStream(frame.stream);
      void this.send(encodeFrame(FrameType.windowUpdate, Flag.ack, frame.stream, 0))
        .catch(() => {});
      stream.receive(frame);
      if (this.#options.onStream) this.#options.onStream(stream);
      else stream.reset();
      return;
    }
    // Frames for a stream already reset or finished are dropped, as yamux does.
    stream?.receive(frame);
  }

  #onPing(frame: Frame): void {
    if (frame.flags & Flag.syn) {
      void this.send(encodeFrame(FrameType.ping, Flag.ack, 0, frame.length)).catch(() => {});
    } else {
      this.#pings.get(frame.length)?.(performance.now());
      this.#pings.delete(frame.length);
    }
  }

  #onGoAway(frame: Frame): void {
    this.#peerGoneAway = true;
    if (frame.length === GoAwayCode.normal) return;
    const why = frame.length === GoAwayCode.protocolError
      ? "a protocol error"
      : "an internal error";
    this.#end(new Error(`The tunnel's peer closed it after ${why} (go-away ${frame.length})`));
  }

  #end(err: Error | null): void {
    if (this.#ended !== undefined) return;
    this.#ended = err;
    const why = err ?? new Error("The tunnel closed");
    for (const stream of [...this.#streams.values()]) stream.fail(why);
    this.#streams.clear();
    // Let a queued go-away reach the peer before the transport goes.
    void this.#writes.finally(() => this.#transport.close());
    this.#closed.resolve(err ?? undefined);
  }
}

function isGoAway(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[1] === FrameType.goAway;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
