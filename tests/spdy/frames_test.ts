import assert from "node:assert/strict";
import { encodeFrame, type SpdyFrame } from "../../spdy/frames.ts";
import { SpdyFrameParser } from "../../spdy/frame_parser.ts";
import { isSpdyProtocolError } from "../../spdy/errors.ts";
import {
  concatBytes,
  fromHex,
  hex,
  pseudoRandomBytes,
} from "../core/kubelet_api/streaming/_memory_duplex.ts";

const block = fromHex("78f9e3c6a7c2 0102030405");

const everyFrameType: SpdyFrame[] = [
  { type: "data", streamId: 1, fin: false, data: pseudoRandomBytes(1000, 7) },
  { type: "data", streamId: 3, fin: true, data: new Uint8Array(0) },
  {
    type: "syn_stream",
    streamId: 5,
    associatedToStreamId: 0,
    priority: 3,
    slot: 0,
    fin: false,
    unidirectional: true,
    headerBlock: block,
  },
  { type: "syn_reply", streamId: 5, fin: true, headerBlock: block },
  { type: "rst_stream", streamId: 7, status: 5 },
  {
    type: "settings",
    clearSettings: true,
    settings: [{ flags: 1, id: 4, value: 100 }, { flags: 0, id: 7, value: 65536 }],
  },
  { type: "ping", id: 0xfffffffe },
  { type: "goaway", lastGoodStreamId: 9, status: 0 },
  { type: "headers", streamId: 9, fin: false, headerBlock: block },
  { type: "window_update", streamId: 11, delta: 0x7fffffff },
];

function parseAll(chunks: Uint8Array[]): SpdyFrame[] {
  const parser = new SpdyFrameParser();
  const frames = chunks.flatMap((chunk) => parser.push(chunk));
  parser.finish();
  return frames;
}

function parseError(bytes: Uint8Array, options = {}) {
  const parser = new SpdyFrameParser(options);
  try {
    parser.push(bytes);
    parser.finish();
  } catch (err) {
    assert.ok(isSpdyProtocolError(err), `expected a SpdyProtocolError, got ${err}`);
    return err;
  }
  assert.fail("the parser accepted malformed input");
}

Deno.test("every frame type survives an encode/parse round trip", () => {
  for (const frame of everyFrameType) {
    assert.deepEqual(parseAll([encodeFrame(frame)]), [frame]);
  }
});

Deno.test("frames encode to the exact bytes Kubernetes peers send", () => {
  const empty = new Uint8Array(0);
  assert.equal(
    hex(encodeFrame({ type: "syn_reply", streamId: 1, fin: false, headerBlock: fromHex("aabb") })),
    "8003000200000006" + "00000001" + "aabb",
  );
  assert.equal(
    hex(encodeFrame({ type: "data", streamId: 3, fin: true, data: empty })),
    "0000000301000000",
  );
  assert.equal(
    hex(encodeFrame({ type: "rst_stream", streamId: 5, status: 5 })),
    "80030003000000080000000500000005",
  );
  assert.equal(hex(encodeFrame({ type: "ping", id: 1 })), "800300060000000400000001");
  assert.equal(
    hex(encodeFrame({ type: "goaway", lastGoodStreamId: 7, status: 0 })),
    "80030007000000080000000700000000",
  );
  assert.equal(
    hex(encodeFrame({
      type: "syn_stream",
      streamId: 1,
      associatedToStreamId: 0,
      priority: 0,
      slot: 0,
      fin: false,
      unidirectional: false,
      headerBlock: fromHex("aa"),
    })),
    "800300010000000b" + "00000001" + "00000000" + "0000" + "aa",
  );
});

Deno.test("frames split at every byte boundary parse the same as whole", () => {
  const wire = concatBytes(everyFrameType.map(encodeFrame));
  for (let cut = 0; cut <= wire.length; cut += 7) {
    assert.deepEqual(parseAll([wire.subarray(0, cut), wire.subarray(cut)]), everyFrameType);
  }
  const bytewise = Array.from(wire, (b) => Uint8Array.of(b));
  assert.deepEqual(parseAll(bytewise), everyFrameType);
});

Deno.test("many frames in one chunk all come out, in order", () => {
  const many = Array.from({ length: 500 }, (_, i): SpdyFrame => ({ type: "ping", id: i + 1 }));
  assert.deepEqual(parseAll([concatBytes(many.map(encodeFrame))]), many);
});

Deno.test("unknown control frame types are skipped, as SPDY/3 requires", () => {
  const noop = fromHex("8003000500000002abcd");
  assert.deepEqual(parseAll([noop, encodeFrame({ type: "ping", id: 2 })]), [{
    type: "ping",
    id: 2,
  }]);
});

Deno.test("a control frame of another SPDY version is refused", () => {
  assert.equal(parseError(fromHex("800200060000000400000001")).code, "unsupported_version");
});

Deno.test("an oversized frame is refused from its header, before its payload is buffered", () => {
  const parser = new SpdyFrameParser({ maxDataPayload: 1024 });
  assert.throws(() => parser.push(fromHex("00000001 00ffffff")), (err) => {
    assert.ok(isSpdyProtocolError(err));
    assert.equal(err.code, "frame_too_large");
    assert.equal(err.streamId, 1);
    return true;
  });
  assert.equal(parser.bufferedBytes, 0);
  assert.equal(
    parseError(fromHex("8003000100ffffff"), { maxControlPayload: 4096 }).code,
    "frame_too_large",
  );
});

Deno.test("frames with impossible lengths or ids are refused precisely", () => {
  const cases: Array<[string, string]> = [
    ["8003000300000007 00000001000000", "RST_STREAM"],
    ["8003000300000008 0000000100000000", "status 0"],
    ["8003000300000008 0000000000000005", "stream 0"],
    ["8003000100000009 000000010000000000", "SYN_STREAM"],
    ["800300010000000a 00000000000000000000", "stream 0"],
    ["8003000200000003 000001", "SYN_REPLY"],
    ["8003000400000008 0000000200000000", "claims 2 entries"],
    ["8003000600000005 0000000101", "PING"],
    ["8003000700000004 00000001", "GOAWAY"],
    ["8003000900000004 00000001", "WINDOW_UPDATE"],
  ];
  for (const [bytes, mention] of cases) {
    const err = parseError(fromHex(bytes));
    assert.equal(err.code, "invalid_frame", bytes);
    assert.match(err.message, new RegExp(mention), bytes);
  }
});

Deno.test("input that stops inside a frame is reported as truncated", () => {
  const frame = encodeFrame({ type: "ping", id: 9 });
  assert.equal(parseError(frame.subarray(0, 10)).code, "truncated");
});

Deno.test("a parser that failed keeps failing with the same error", () => {
  const parser = new SpdyFrameParser();
  assert.throws(() => parser.push(fromHex("800200060000000400000001")));
  const again = (() => {
    try {
      parser.push(encodeFrame({ type: "ping", id: 2 }));
    } catch (err) {
      return err;
    }
  })();
  assert.ok(isSpdyProtocolError(again) && again.code === "unsupported_version");
});

Deno.test("encoding a payload larger than 24 bits is a RangeError", () => {
  assert.throws(
    () => encodeFrame({ type: "data", streamId: 1, fin: false, data: new Uint8Array(1 << 24) }),
    RangeError,
  );
});
