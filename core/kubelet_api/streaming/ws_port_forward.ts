/**
 * Port-forward over WebSocket channels (`v4.channel.k8s.io`, `v4.base64.channel.k8s.io`, or no
 * sub-protocol), as the kubelet's CRI streaming server serves it (cri-streaming
 * `portforward/websocket.go : handleWebSocketStreams, websocketStreamHandler.portForward`):
 * ports come from `?port=`; port i gets data channel 2i and error channel 2i+1; the server
 * starts both with the port as a 2-byte little-endian prefix, then copies data; an error is
 * written as text on the error channel. One connection per port, for the socket's lifetime.
 * @module
 */
// @ts-types="@types/ws"
import type { WebSocket } from "ws";
import type { Logger } from "../../../base/log.ts";
import {
  decodeChannelMessage,
  encodeChannelMessage,
  encodePortPrefix,
  portForwardChannels,
  type WsProtocolInfo,
} from "./ws_channels.ts";
import { WS_MAX_SEND, wsCloseGracefully, wsSend } from "./ws_transport.ts";

/** Reads `?port=80&port=443` or `?port=80,443`; a message when missing or invalid. */
export function parsePortQuery(query: URLSearchParams): number[] | string {
  const values = query.getAll("port").flatMap((v) => v.split(",")).map((v) => v.trim())
    .filter((v) => v);
  if (values.length === 0) return 'query parameter "port" is required';
  const ports: number[] = [];
  for (const value of values) {
    const port = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
    if (!(port >= 1 && port <= 65535)) return `invalid port "${value}": must be 1 to 65535`;
    ports.push(port);
  }
  return ports;
}

/** Forwards one connection: the client's bytes on `readable`, the pod's on `writable`. */
export type WsPortHandler = (
  port: number,
  stream: { readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> },
  options: { signal: AbortSignal },
) => Promise<void>;

/** Options for {@link serveWsPortForwardChannels}. */
export interface WsPortForwardOptions {
  info: WsProtocolInfo;
  ports: number[];
  /** Names the pod in error messages. */
  podDescription: string;
  touch: () => void;
  signal: AbortSignal;
  log: Logger;
}

/** Serves every port until all are done or the socket closes; then closes it. */
export async function serveWsPortForwardChannels(
  ws: WebSocket,
  handler: WsPortHandler,
  options: WsPortForwardOptions,
): Promise<void> {
  const { info, ports, touch } = options;
  let chain: Promise<void> = Promise.resolve();
  const send = (channel: number, payload: Uint8Array) => {
    const message = encodeChannelMessage(info, channel, payload);
    const sent = chain.then(() => {
      touch();
      return wsSend(ws, message);
    });
    chain = sent.catch(() => {});
    return sent;
  };
  const inputs = ports.map(() => {
    const input = {
      open: true,
      controller: undefined as unknown as ReadableStreamDefaultController<Uint8Array>,
      readable: undefined as unknown as ReadableStream<Uint8Array>,
    };
    input.readable = new ReadableStream<Uint8Array>({
      start: (c) => {
        input.controller = c;
      },
      pull: () => {
        if (ws.isPaused) ws.resume();
      },
      cancel: () => {
        input.open = false;
        if (ws.isPaused) ws.resume();
      },
    }, { highWaterMark: 1 << 20, size: (c) => c.byteLength });
    return input;
  });
  const gone = new AbortController();
  ws.on("message", (data: Uint8Array, isBinary: boolean) => {
    touch();
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    let message;
    try {
      message = decodeChannelMessage(
        info,
        isBinary ? bytes : new TextDecoder().decode(bytes),
        ports.length * 2,
      );
    } catch {
      return;
    }
    // Only even (data) channels carry input; the error channels are the server's.
    if (message.kind !== "data" || message.channel % 2 !== 0) return;
    const input = inputs[message.channel / 2];
    if (!input.open) return;
    input.controller.enqueue(message.payload.slice());
    if ((input.controller.desiredSize ?? 1) <= 0) ws.pause();
  });
  ws.on("ping", touch);
  ws.on("close", () => {
    for (const input of inputs) {
      if (input.open) input.controller.close();
      input.open = false;
    }
    gone.abort();
  });
  const signal = AbortSignal.any([options.signal, gone.signal]);
  const forward = ports.map(async (port, index) => {
    const channels = portForwardChannels(index);
    const prefix = encodePortPrefix(port);
    await Promise.all([send(channels.data, prefix), send(channels.error, prefix)]).catch(() => {});
    const writable = new WritableStream<Uint8Array>({
      async write(chunk) {
        for (let at = 0; at < chunk.length; at += WS_MAX_SEND) {
          await send(channels.data, chunk.subarray(at, Math.min(at + WS_MAX_SEND, chunk.length)));
        }
      },
    });
    try {
      await handler(port, { readable: inputs[index].readable, writable }, { signal });
    } catch (err) {
      const text = `error forwarding port ${port} to pod ${options.podDescription}: ${
        err instanceof Error ? err.message : String(err)
      }`;
      options.log.debug("{text}", { text });
      await send(channels.error, new TextEncoder().encode(text)).catch(() => {});
    }
  });
  await Promise.all(forward);
  await chain;
  await wsCloseGracefully(ws, { lingerMs: 2000 });
}
