/**
 * Exec and attach over WebSocket, as the kubelet's CRI streaming server and (for v5) the
 * apiserver's translator serve them (cri-streaming `remotecommand/websocket.go :
 * createWebSocketStreams`; apiserver `pkg/util/proxy/websocket.go`): an empty message on the
 * lowest writable channel once ready, stdin on channel 0, stdout 1, stderr 2, the status on 3,
 * resizes on 4, and for v5 the client's `[255, channel]` CLOSE signal; then close 1000.
 * @module
 */
// @ts-types="@types/ws"
import type { WebSocket } from "ws";
import type { Logger } from "../../../base/log.ts";
import type { CommandChannels } from "./command_session.ts";
import type { RemoteCommandResult } from "./remote_command.ts";
import { LatestResize, ResizeDecoder } from "./resize.ts";
import {
  decodeChannelMessage,
  encodeChannelMessage,
  encodeStatusMessage,
  isWsChannelError,
  readinessChannel,
  WsChannel,
  type WsProtocolInfo,
} from "./ws_channels.ts";
import { WS_MAX_SEND, wsCloseGracefully, wsSend } from "./ws_transport.ts";

/** Options for {@link wsCommandChannels}. */
export interface WsCommandOptions {
  info: WsProtocolInfo;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
  /** Called for every message and send (idle tracking). */
  touch: () => void;
  /** How long to wait for the client's close frame; default 10 s. */
  lingerMs?: number;
  log: Logger;
  /** Bytes of stdin buffered before the socket is paused; default 1 MiB. */
  highWaterMark?: number;
}

/** Wraps an open WebSocket; sends the readiness message and returns the channels. */
export function wsCommandChannels(ws: WebSocket, options: WsCommandOptions): CommandChannels {
  const { info, touch } = options;
  let chain: Promise<void> = Promise.resolve();
  let outputOpen = true;
  const send = (channel: number, payload: Uint8Array): Promise<void> => {
    const message = encodeChannelMessage(info, channel, payload);
    const sent = chain.then(() => {
      touch();
      return wsSend(ws, message);
    });
    chain = sent.catch(() => {});
    return sent;
  };
  const output = (channel: number) =>
    new WritableStream<Uint8Array>({
      async write(chunk) {
        if (!outputOpen) throw new TypeError("The session has ended; no more output");
        for (let at = 0; at < chunk.length; at += WS_MAX_SEND) {
          await send(channel, chunk.subarray(at, Math.min(at + WS_MAX_SEND, chunk.length)));
        }
      },
    });

  let stdinController: ReadableStreamDefaultController<Uint8Array> | undefined;
  let stdinOpen = options.stdin;
  const stdin = options.stdin
    ? new ReadableStream<Uint8Array>({
      start: (c) => {
        stdinController = c;
      },
      pull: () => {
        if (ws.isPaused) ws.resume();
      },
      cancel: () => {
        stdinOpen = false;
        if (ws.isPaused) ws.resume();
      },
    }, { highWaterMark: options.highWaterMark ?? 1 << 20, size: (c) => c.byteLength })
    : undefined;
  const endStdin = () => {
    if (!stdinOpen) return;
    stdinOpen = false;
    stdinController?.close();
  };

  // Resizes are decoded as they arrive and only the latest is kept: a client flooding channel 4
  // holds one size and at most one partial message, whether or not the container reads them.
  const resize = options.tty ? new LatestResize() : undefined;
  const resizeDecoder = new ResizeDecoder();
  const endResize = () => resize?.end();

  ws.on("message", (data: Uint8Array, isBinary: boolean) => {
    touch();
    let message;
    try {
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      message = decodeChannelMessage(info, isBinary ? bytes : new TextDecoder().decode(bytes), 5);
    } catch (err) {
      const reason = isWsChannelError(err) ? err.message : "malformed message";
      options.log.debug("closing a WebSocket session: {err}", { err });
      ws.close(1008, reason.slice(0, 120));
      return;
    }
    if (message.kind === "close") {
      if (message.channel === WsChannel.stdin) endStdin();
      if (message.channel === WsChannel.resize) endResize();
      return;
    }
    if (message.kind !== "data") return;
    if (message.channel === WsChannel.stdin && stdinOpen) {
      stdinController!.enqueue(message.payload.slice());
      if ((stdinController!.desiredSize ?? 1) <= 0) ws.pause();
    } else if (message.channel === WsChannel.resize && resize && !resize.ended) {
      const sizes = resizeDecoder.push(message.payload);
      for (const size of sizes ?? []) resize.offer(size);
      if (!sizes || resizeDecoder.failed) endResize();
    }
  });
  ws.on("ping", touch);
  ws.on("close", () => {
    outputOpen = false;
    endStdin();
    endResize();
  });

  const ready = readinessChannel({ stdout: options.stdout, stderr: options.stderr });
  void send(ready, new Uint8Array(0)).catch(() => {});

  return {
    ...(stdin ? { stdin } : {}),
    ...(options.stdout ? { stdout: output(WsChannel.stdout) } : {}),
    ...(options.stderr && !options.tty ? { stderr: output(WsChannel.stderr) } : {}),
    ...(resize ? { resize } : {}),
    async finish(result: RemoteCommandResult) {
      // Everything already written goes out before the status, then the close frame.
      const status = encodeStatusMessage(info, result);
      if (status !== undefined) {
        const sent = chain.then(() => wsSend(ws, status));
        chain = sent.catch(() => {});
      }
      await chain;
      outputOpen = false;
      endResize();
      await wsCloseGracefully(ws, { lingerMs: options.lingerMs });
    },
    closeNow() {
      outputOpen = false;
      ws.terminate();
    },
  };
}
