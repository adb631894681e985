/**
 * The transport a SPDY session runs on: any byte duplex (an upgraded TLS socket via
 * `node_socket_duplex.ts`, a WebSocket tunnel, an in-memory pair in tests).
 * @module
 */

/** A byte transport: an upgraded TLS/TCP socket, or anything shaped like one. */
export interface ByteDuplex {
  /** Bytes from the peer; ends at EOF. */
  readonly readable: ReadableStream<Uint8Array>;
  /** Sends bytes; resolves when the transport can take more (back-pressure). */
  write(bytes: Uint8Array): Promise<void>;
  /** Ends the transport (flushing what was written when it can) and releases it. */
  close(): void;
}

import type { SignalOptions } from "../base/options.ts";
export type { SignalOptions };
