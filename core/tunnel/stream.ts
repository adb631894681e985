/**
 * One yamux stream: a readable that grants the peer credit as its reader consumes (a window
 * update once half the window is read), a writable that waits for credit before each frame,
 * half-close (closing the writable sends FIN; the readable ends at the peer's FIN) and reset.
 * @module
 */
import { encodeFrame, Flag, type Frame, FrameType, TunnelProtocolError } from "./frame.ts";

/** What a stream needs from its session. */
export interface StreamSession {
  send(bytes: Uint8Array): Promise<void>;
  forget(id: number): void;
}

/** Window sizes for a stream. */
export interface StreamLimits {
  window: number;
  maxFrame: number;
}

/** A tunnel stream; see the module doc. */
export class MuxStream {
  /** Bytes from the peer; ends at its FIN, errors on reset or when the session ends. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Bytes to the peer; `close()` half-closes (FIN), `abort()` resets. */
  readonly writable: WritableStream<Uint8Array>;
  readonly #session: StreamSession;
  readonly #limits: StreamLimits;
  readonly #inbox: Uint8Array[] = [];
  #recvWindow: number;
  #unacknowledged = 0;
  #sendWindow: number;
  #wake?: () => void;
  #sendWake?: () => void;
  #remoteFin = false;
  #localFin = false;
  #error?: Error;

  constructor(readonly id: number, session: StreamSession, limits: StreamLimits) {
    this.#session = session;
    this.#limits = limits;
    this.#recvWindow = limits.window;
    this.#sendWindow = limits.window;
    this.readable = new ReadableStream<Uint8Array>({
      pull: (controller) => this.#pull(controller),
      cancel: () => this.reset(),
    }, { highWaterMark: 0 });
    this.writable = new WritableStream<Uint8Array>({
      write: (chunk) => this.#write(chunk),
      close: () => this.#finish(),
      abort: () => this.reset(),
    });
  }

  /** Resets the stream (RST to the peer); both directions fail. */
  reset(): void {
    if (this.#error) return;
    void this.#session.send(encodeFrame(FrameType.windowUpdate, Flag.rst, this.id, 0))
      .catch(() => {});
    this.fail(new Error(`Tunnel stream ${this.id} was reset by this end`));
  }

  /** Ends both directions with `err` (the session ended, or a reset). */
  fail(err: Error): void {
    if (this.#error) return;
    this.#error = err;
    this.#wake?.();
    this.#sendWake?.();
    this.#session.forget(this.id);
  }

  /** A frame for this stream, from the session's read loop. */
  receive(frame: Frame): void {
    if (this.#error) return;
    if (frame.type === FrameType.windowUpdate) {
      this.#sendWindow += frame.length;
      this.#sendWake?.();
    } else if (frame.type === FrameType.data && frame.payload?.length) {
      if (this.#remoteFin) {
        throw new TunnelProtocolError(`Tunnel stream ${this.id} got data after its FIN`);
      }
      if (frame.payload.length > this.#recvWindow) {
        throw new TunnelProtocolError(
          `Tunnel stream ${this.id} got ${frame.payload.length} bytes with only ` +
            `${this.#recvWindow} of window left`,
        );
      }
      this.#recvWindow -= frame.payload.length;
      this.#inbox.push(frame.payload);
    }
    if (frame.flags & Flag.rst) {
      return this.fail(new Error(`Tunnel stream ${this.id} was reset by the peer`));
    }
    if (frame.flags & Flag.fin) {
      this.#remoteFin = true;
      if (this.#localFin) this.#session.forget(this.id);
    }
    this.#wake?.();
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (!this.#inbox.length && !this.#remoteFin && !this.#error) {
      await new Promise<void>((resolve) => this.#wake = resolve);
      this.#wake = undefined;
    }
    const chunk = this.#inbox.shift();
    if (chunk) {
      controller.enqueue(chunk);
      this.#credit(chunk.length);
    } else if (this.#error) controller.error(this.#error);
    else controller.close();
  }

  /** Gives the peer back what the reader consumed, once it is half a window. */
  #credit(n: number): void {
    this.#unacknowledged += n;
    if (this.#unacknowledged < this.#limits.window / 2 || this.#remoteFin) return;
    const delta = this.#unacknowledged;
    this.#unacknowledged = 0;
    this.#recvWindow += delta;
    void this.#session.send(encodeFrame(FrameType.windowUpdate, 0, this.id, delta))
      .catch(() => {});
  }

  async #write(chunk: Uint8Array): Promise<void> {
    for (let offset = 0; offset < chunk.length;) {
      while (this.#sendWindow === 0 && !this.#error) {
        await new Promise<void>((resolve) => this.#sendWake = resolve);
        this.#sendWake = undefined;
      }
      if (this.#error) throw this.#error;
      const n = Math.min(this.#sendWindow, this.#limits.maxFrame, chunk.length - offset);
      this.#sendWindow -= n;
      await this.#session.send(
        encodeFrame(FrameType.data, 0, this.id, chunk.subarray(offset, offset + n)),
      );
      offset += n;
    }
  }

  async #finish(): Promise<void> {
    if (this.#error) throw this.#error;
    this.#localFin = true;
    await this.#session.send(encodeFrame(FrameType.windowUpdate, Flag.fin, this.id, 0));
    if (this.#remoteFin) this.#session.forget(this.id);
  }
}
