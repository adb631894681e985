/**
 * SPDY/3 frame types and {@link encodeFrame}, which turns one frame into bytes (the parser is
 * in `spdy_frame_parser.ts`). Header blocks stay compressed here; see
 * `spdy_headers.ts`. Layouts follow the SPDY draft 3 spec as implemented by moby/spdystream
 * (`spdy/read.go`, `spdy/write.go`), which Kubernetes uses on both ends.
 * @module
 */
/** The protocol version carried by every control frame ("SPDY/3.1" is only the upgrade token). */
export const SPDY_VERSION = 3;

/** Control frame type codes. */
export const ControlType = {
  synStream: 1,
  synReply: 2,
  rstStream: 3,
  settings: 4,
  ping: 6,
  goAway: 7,
  headers: 8,
  windowUpdate: 9,
} as const;

/** Flag bits: FIN on DATA, SYN_STREAM, SYN_REPLY, HEADERS; UNIDIRECTIONAL on SYN_STREAM. */
export const FLAG_FIN = 0x01;
/** SYN_STREAM flag: the sender will not receive on this stream. */
export const FLAG_UNIDIRECTIONAL = 0x02;
/** SETTINGS flag: forget persisted settings. */
export const FLAG_CLEAR_SETTINGS = 0x01;

/** RST_STREAM status codes. */
export const RstStatus = {
  protocolError: 1,
  invalidStream: 2,
  refusedStream: 3,
  unsupportedVersion: 4,
  cancel: 5,
  internalError: 6,
  flowControlError: 7,
  streamInUse: 8,
  streamAlreadyClosed: 9,
  invalidCredentials: 10,
  frameTooLarge: 11,
} as const;

/** GOAWAY status codes. */
export const GoAwayStatus = { ok: 0, protocolError: 1, internalError: 2 } as const;

/** Largest payload a 24-bit length field can describe. */
export const MAX_FRAME_PAYLOAD = 0xffffff;

/** One SETTINGS entry. */
export interface SpdySetting {
  flags: number;
  id: number;
  value: number;
}

/** A decoded SPDY/3 frame. `headerBlock` is still zlib-compressed. */
export type SpdyFrame =
  | { type: "data"; streamId: number; fin: boolean; data: Uint8Array }
  | {
    type: "syn_stream";
    streamId: number;
    associatedToStreamId: number;
    priority: number;
    slot: number;
    fin: boolean;
    unidirectional: boolean;
    headerBlock: Uint8Array;
  }
  | { type: "syn_reply"; streamId: number; fin: boolean; headerBlock: Uint8Array }
  | { type: "rst_stream"; streamId: number; status: number }
  | { type: "settings"; clearSettings: boolean; settings: SpdySetting[] }
  | { type: "ping"; id: number }
  | { type: "goaway"; lastGoodStreamId: number; status: number }
  | { type: "headers"; streamId: number; fin: boolean; headerBlock: Uint8Array }
  | { type: "window_update"; streamId: number; delta: number };

/** Stream ids and deltas are 31 bits; the top bit is reserved. */
export const ID_MASK = 0x7fffffff;

function controlFrame(type: number, flags: number, payloadLength: number): Uint8Array {
  if (payloadLength > MAX_FRAME_PAYLOAD) {
    throw new RangeError(`SPDY frame payload of ${payloadLength} bytes exceeds 16 MiB - 1`);
  }
  const bytes = new Uint8Array(8 + payloadLength);
  const view = new DataView(bytes.buffer);
  view.setUint16(0, 0x8000 | SPDY_VERSION);
  view.setUint16(2, type);
  view.setUint32(4, ((flags & 0xff) << 24 | payloadLength) >>> 0);
  return bytes;
}

function streamFrame(type: number, flags: number, streamId: number, block: Uint8Array) {
  const bytes = controlFrame(type, flags, 4 + block.length);
  new DataView(bytes.buffer).setUint32(8, streamId & ID_MASK);
  bytes.set(block, 12);
  return bytes;
}

function pairFrame(type: number, first: number, second: number): Uint8Array {
  const bytes = controlFrame(type, 0, 8);
  const view = new DataView(bytes.buffer);
  view.setUint32(8, first >>> 0);
  view.setUint32(12, second >>> 0);
  return bytes;
}

/** Serialises one frame. Throws RangeError for payloads a 24-bit length cannot carry. */
export function encodeFrame(frame: SpdyFrame): Uint8Array {
  switch (frame.type) {
    case "data": {
      if (frame.data.length > MAX_FRAME_PAYLOAD) {
        throw new RangeError(`SPDY DATA payload of ${frame.data.length} bytes exceeds 16 MiB - 1`);
      }
      const bytes = new Uint8Array(8 + frame.data.length);
      const view = new DataView(bytes.buffer);
      view.setUint32(0, frame.streamId & ID_MASK);
      view.setUint32(4, ((frame.fin ? FLAG_FIN : 0) << 24 | frame.data.length) >>> 0);
      bytes.set(frame.data, 8);
      return bytes;
    }
    case "syn_stream": {
      const flags = (frame.fin ? FLAG_FIN : 0) | (frame.unidirectional ? FLAG_UNIDIRECTIONAL : 0);
      const bytes = controlFrame(ControlType.synStream, flags, 10 + frame.headerBlock.length);
      const view = new DataView(bytes.buffer);
      view.setUint32(8, frame.streamId & ID_MASK);
      view.setUint32(12, frame.associatedToStreamId & ID_MASK);
      bytes[16] = (frame.priority & 0x07) << 5;
      bytes[17] = frame.slot & 0xff;
      bytes.set(frame.headerBlock, 18);
      return bytes;
    }
    case "syn_reply":
    case "headers": {
      const type = frame.type === "syn_reply" ? ControlType.synReply : ControlType.headers;
      return streamFrame(type, frame.fin ? FLAG_FIN : 0, frame.streamId, frame.headerBlock);
    }
    case "rst_stream":
      return pairFrame(ControlType.rstStream, frame.streamId & ID_MASK, frame.status);
    case "settings": {
      const flags = frame.clearSettings ? FLAG_CLEAR_SETTINGS : 0;
      const bytes = controlFrame(ControlType.settings, flags, 4 + 8 * frame.settings.length);
      const view = new DataView(bytes.buffer);
      view.setUint32(8, frame.settings.length);
      frame.settings.forEach((s, i) => {
        view.setUint32(12 + 8 * i, ((s.flags & 0xff) << 24 | (s.id & 0xffffff)) >>> 0);
        view.setUint32(16 + 8 * i, s.value >>> 0);
      });
      return bytes;
    }
    case "ping": {
      const bytes = controlFrame(ControlType.ping, 0, 4);
      new DataView(bytes.buffer).setUint32(8, frame.id >>> 0);
      return bytes;
    }
    case "goaway":
      return pairFrame(ControlType.goAway, frame.lastGoodStreamId & ID_MASK, frame.status);
    case "window_update":
      return pairFrame(ControlType.windowUpdate, frame.streamId & ID_MASK, frame.delta & ID_MASK);
  }
}
