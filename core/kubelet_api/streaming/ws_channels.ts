/**
 * The WebSocket channel protocols of exec, attach and port-forward, as pure functions
 * (k8s.io/streaming `pkg/httpstream/wsstream/conn.go : handshake, Conn.handle, Conn.write`;
 * cri-streaming `remotecommand/websocket.go`, `portforward/websocket.go`): every message is one
 * channel byte plus payload; base64 variants send text with an ASCII digit and base64 payload;
 * v5 adds a client CLOSE signal `[255, channel]`. No server here, only framing and choice.
 * @module
 */
import { StreamProtocol } from "../../../spdy/protocols.ts";
import { encodeRemoteCommandStatus, type RemoteCommandResult } from "./remote_command.ts";

/** Exec/attach protocols we serve, in our preference order (the client's order decides). */
export const WS_EXEC_PROTOCOLS: readonly string[] = [
  StreamProtocol.v5,
  StreamProtocol.v4,
  StreamProtocol.v4Base64,
  StreamProtocol.v1,
  StreamProtocol.v1Base64,
  "",
];

/** Channel numbers of exec/attach. */
export const WsChannel = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4 } as const;

/** The v5 CLOSE signal's first byte. */
export const WS_CLOSE_SIGNAL = 255;

/** What a sub-protocol means for framing. */
export interface WsProtocolInfo {
  protocol: string;
  /** Text messages with base64 payloads instead of binary messages. */
  base64: boolean;
  /** Remote command version: 1 (plain-text errors), 4 or 5 (Status JSON). */
  version: 1 | 4 | 5;
  /** The client may send `[255, channel]` to half-close a channel. */
  supportsClose: boolean;
}

/** Framing facts for a channel sub-protocol, or undefined if it is not one. `""` is v1 binary. */
export function wsProtocolInfo(protocol: string): WsProtocolInfo | undefined {
  switch (protocol) {
    case "":
    case StreamProtocol.v1:
      return { protocol, base64: false, version: 1, supportsClose: false };
    case StreamProtocol.v1Base64:
      return { protocol, base64: true, version: 1, supportsClose: false };
    case StreamProtocol.v4:
      return { protocol, base64: false, version: 4, supportsClose: false };
    case StreamProtocol.v4Base64:
      return { protocol, base64: true, version: 4, supportsClose: false };
    case StreamProtocol.v5:
      return { protocol, base64: false, version: 5, supportsClose: true };
  }
  return undefined;
}

/**
 * The sub-protocol to answer with: the first one in the CLIENT's order that the server
 * supports; an empty offer means `""` (wsstream `handshake`). Undefined when nothing fits: the
 * server should refuse the upgrade (non-101) so kubectl falls back to SPDY.
 */
export function chooseWebSocketProtocol(
  offered: string | readonly string[] | null | undefined,
  supported: readonly string[] = WS_EXEC_PROTOCOLS,
): string | undefined {
  const list = (typeof offered === "string" ? [offered] : offered ?? [])
    .flatMap((v) => v.split(",")).map((p) => p.trim()).filter((p) => p);
  const candidates = list.length === 0 ? [""] : list;
  return candidates.find((p) => supported.includes(p));
}

/** Frames a payload for `channel`: bytes for binary protocols, a string for base64 ones. */
export function encodeChannelMessage(
  info: WsProtocolInfo,
  channel: number,
  payload: Uint8Array,
): Uint8Array | string {
  if (!Number.isInteger(channel) || channel < 0 || channel > 254) {
    throw new RangeError(`A channel number must be 0 to 254, not ${channel}`);
  }
  if (info.base64) return String.fromCharCode(0x30 + channel) + toBase64(payload);
  const message = new Uint8Array(payload.length + 1);
  message[0] = channel;
  message.set(payload, 1);
  return message;
}

/** One decoded client message. */
export type WsChannelMessage =
  | { kind: "data"; channel: number; payload: Uint8Array }
  | { kind: "close"; channel: number }
  /** Empty messages, and data for channels the exchange does not have, are skipped upstream. */
  | { kind: "ignore"; reason: string };

/** A client message that breaks the protocol; close the connection. */
export class WsChannelError extends Error {
  override name = "WsChannelError";
}

/** True when `err` is a {@link WsChannelError}. */
export function isWsChannelError(err: unknown): err is WsChannelError {
  return err instanceof WsChannelError;
}

/**
 * Decodes a client message for an exchange with `channelCount` channels. Data for unknown
 * channels and empty messages are ignored as upstream does; a malformed CLOSE signal, or one for
 * a channel that does not exist, is a {@link WsChannelError} (upstream closes the connection).
 */
export function decodeChannelMessage(
  info: WsProtocolInfo,
  message: Uint8Array | string,
  channelCount: number,
): WsChannelMessage {
  const bytes = typeof message === "string" ? new TextEncoder().encode(message) : message;
  if (bytes.length === 0) return { kind: "ignore", reason: "empty message" };
  if (info.supportsClose && bytes[0] === WS_CLOSE_SIGNAL) {
    if (bytes.length !== 2) {
      throw new WsChannelError("A CLOSE signal must carry exactly one channel byte");
    }
    if (bytes[1] >= channelCount) {
      throw new WsChannelError(`A CLOSE signal names channel ${bytes[1]}, which does not exist`);
    }
    return { kind: "close", channel: bytes[1] };
  }
  const channel = info.base64 ? bytes[0] - 0x30 : bytes[0];
  if (channel < 0 || channel >= channelCount) {
    return { kind: "ignore", reason: `no channel ${channel}` };
  }
  if (!info.base64) return { kind: "data", channel, payload: bytes.subarray(1) };
  const payload = fromBase64(new TextDecoder().decode(bytes.subarray(1)));
  if (!payload) return { kind: "ignore", reason: "invalid base64 payload" };
  return { kind: "data", channel, payload };
}

/** The message ending an exec/attach on channel 3 (Status JSON on v4/v5, text on v1). */
export function encodeStatusMessage(
  info: WsProtocolInfo,
  result: RemoteCommandResult,
): Uint8Array | string | undefined {
  const status = encodeRemoteCommandStatus(info.version, result);
  if (status.length === 0) return undefined;
  return encodeChannelMessage(info, WsChannel.error, status);
}

/**
 * The channel that gets an empty message right after the upgrade so the client knows the
 * server is ready: the lowest writable one (stdout, else stderr, else error).
 */
export function readinessChannel(streams: { stdout: boolean; stderr: boolean }): number {
  if (streams.stdout) return WsChannel.stdout;
  return streams.stderr ? WsChannel.stderr : WsChannel.error;
}

/**
 * WebSocket port-forward (v4): port i uses data channel 2i and error channel 2i+1, and each
 * channel starts with the port as a little-endian uint16 (`portforward/websocket.go`).
 */
export function portForwardChannels(index: number): { data: number; error: number } {
  return { data: 2 * index, error: 2 * index + 1 };
}

/** The 2-byte little-endian port prefix of a WebSocket port-forward channel. */
export function encodePortPrefix(port: number): Uint8Array {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError(`A port must be 1 to 65535, not ${port}`);
  }
  return Uint8Array.of(port & 0xff, port >>> 8);
}

/** True for a WebSocket sub-protocol that tunnels SPDY (`SPDY/3.1+….k8s.io`). */
export function isSpdyTunnelProtocol(protocol: string): boolean {
  return protocol.startsWith("SPDY/3.1+") && protocol.endsWith(".k8s.io");
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}
