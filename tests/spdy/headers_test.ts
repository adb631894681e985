import assert from "node:assert/strict";
import zlib from "node:zlib";
// @ts-types="@types/pako"
import pako from "pako";
import {
  decodeHeaderBlock,
  encodeHeaderBlock,
  headerValue,
  SpdyHeaderCompressor,
  SpdyHeaderDecompressor,
  type SpdyHeaders,
  spdyHeaders,
} from "../../spdy/headers.ts";
import { SPDY3_DICTIONARY } from "../../spdy/_dictionary.ts";
import { isSpdyProtocolError } from "../../spdy/errors.ts";
import { concatBytes, fromHex, hex } from "../core/kubelet_api/streaming/_memory_duplex.ts";

interface Vector {
  headers: SpdyHeaders;
  compressedHex: string;
}
const vectors: { blocks: Vector[] } = JSON.parse(
  await Deno.readTextFile(
    new URL("../core/kubelet_api/streaming/vectors/node_zlib_header_blocks.json", import.meta.url),
  ),
);

function adler32(bytes: Uint8Array): number {
  let a = 1, b = 0;
  for (const x of bytes) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

function protocolErrorCode(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(isSpdyProtocolError(err), `expected a SpdyProtocolError, got ${err}`);
    return err.code;
  }
  return assert.fail("no error was raised");
}

Deno.test("the SPDY/3 dictionary has the size and Adler-32 the spec gives", () => {
  assert.equal(SPDY3_DICTIONARY.length, 1423);
  assert.equal(adler32(SPDY3_DICTIONARY), 0xe3c6a7c2);
});

Deno.test("header blocks compressed by Node's zlib with the dictionary decode in sequence", () => {
  const decompressor = new SpdyHeaderDecompressor();
  for (const vector of vectors.blocks) {
    assert.deepEqual(decompressor.decompress(fromHex(vector.compressedHex)), vector.headers);
  }
});

Deno.test("compressed blocks carry the dictionary id and share one context per direction", () => {
  const compressor = new SpdyHeaderCompressor();
  const first = compressor.compress(spdyHeaders({ streamtype: "error" }));
  // zlib header with FDICT set, then the dictionary's Adler-32, as Go's writer emits.
  assert.equal(hex(first.subarray(0, 6)), "78f9e3c6a7c2");
  assert.equal(hex(first.subarray(-4)), "0000ffff");
  const second = compressor.compress(spdyHeaders({ streamtype: "error" }));
  assert.ok(second.length < first.length, "a repeated block compresses against the shared window");
});

Deno.test("Node's zlib inflates what we compress, block after block", () => {
  const compressor = new SpdyHeaderCompressor();
  const blocks = vectors.blocks.map((v) => v.headers);
  const wire = concatBytes(blocks.map((h) => compressor.compress(h)));
  const plain = zlib.inflateSync(wire, {
    dictionary: SPDY3_DICTIONARY,
    finishFlush: zlib.constants.Z_SYNC_FLUSH,
  });
  assert.deepEqual(new Uint8Array(plain), concatBytes(blocks.map(encodeHeaderBlock)));
});

Deno.test("many blocks round-trip through one compressor and one decompressor", () => {
  const compressor = new SpdyHeaderCompressor();
  const decompressor = new SpdyHeaderDecompressor();
  for (let i = 0; i < 300; i++) {
    const headers = spdyHeaders({
      streamtype: ["error", "data", "stdin"][i % 3],
      port: String(1000 + i),
      requestid: String(i),
      "x-multi": ["a", String(i), "ü"],
    });
    assert.deepEqual(decompressor.decompress(compressor.compress(headers)), headers);
  }
});

Deno.test("header names are matched and stored in lower case", () => {
  const headers = decodeHeaderBlock(encodeHeaderBlock({ StreamType: ["stdout"] }));
  assert.deepEqual(headers, { streamtype: ["stdout"] });
  assert.equal(headerValue(headers, "StreamType"), "stdout");
  assert.equal(headerValue(headers, "port"), undefined);
});

Deno.test("a zip bomb stops at the decompressed-size limit", () => {
  const deflate = new pako.Deflate({ level: 9, dictionary: SPDY3_DICTIONARY });
  const chunks: Uint8Array[] = [];
  deflate.onData = (chunk) => chunks.push(chunk as Uint8Array);
  deflate.push(encodeHeaderBlock({ bomb: ["a".repeat(20 << 20)] }), 2);
  const bomb = concatBytes(chunks);
  assert.ok(bomb.length < 64 * 1024, `the bomb is small on the wire (${bomb.length} bytes)`);
  const decompressor = new SpdyHeaderDecompressor({ maxBlockBytes: 64 * 1024 });
  assert.equal(protocolErrorCode(() => decompressor.decompress(bomb)), "header_block_too_large");
  assert.equal(
    protocolErrorCode(() => decompressor.decompress(fromHex(vectors.blocks[0].compressedHex))),
    "header_block_too_large",
    "the context stays failed",
  );
});

Deno.test("garbage and a finished zlib stream are compression errors; no dictionary is tolerated as Go does", () => {
  const garbage = new SpdyHeaderDecompressor();
  assert.equal(
    protocolErrorCode(() => garbage.decompress(fromHex("0102030405"))),
    "compression_error",
  );
  const noDictionary = pako.deflate(encodeHeaderBlock({ a: ["b"] }));
  assert.ok(new SpdyHeaderDecompressor().decompress(noDictionary.subarray(0, -4)));
  const ended = new SpdyHeaderDecompressor();
  assert.equal(protocolErrorCode(() => ended.decompress(noDictionary)), "compression_error");
});

Deno.test("malformed uncompressed blocks are refused precisely", () => {
  const cases: Array<[string, RegExp]> = [
    ["000000", /shorter than its count/],
    ["00000001 00000004 6e61", /past the end/],
    ["00000001 00000001 61", /ends inside a value length/],
    ["00000001 00000001 61 00000001 62 ff", /after its last header/],
    ["00000001 00000000 00000000", /empty header name/],
    ["00000001 00000001 ff 00000000", /UTF-8/],
    ["ffffffff", /at most 256/],
  ];
  for (const [bytes, message] of cases) {
    assert.throws(() => decodeHeaderBlock(fromHex(bytes)), (err) => {
      assert.ok(isSpdyProtocolError(err));
      assert.equal(err.code, "invalid_header_block");
      assert.match(err.message, message);
      return true;
    }, bytes);
  }
});
