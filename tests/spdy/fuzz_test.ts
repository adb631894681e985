/**
 * Bounded fuzzing with a fixed seed: random and mutated SPDY byte streams, cut into random
 * chunks, must only ever yield frames or a clean SpdyProtocolError — never another exception,
 * never a hang, never a buffer beyond one frame.
 */
import assert from "node:assert/strict";
import { encodeFrame, type SpdyFrame } from "../../spdy/frames.ts";
import { SpdyFrameParser } from "../../spdy/frame_parser.ts";
import { SpdyHeaderCompressor, SpdyHeaderDecompressor, spdyHeaders } from "../../spdy/headers.ts";
import { SpdySession } from "../../spdy/session.ts";
import { isSpdyProtocolError } from "../../spdy/errors.ts";
import { concatBytes, scriptedDuplex } from "../core/kubelet_api/streaming/_memory_duplex.ts";
import { forBudget, fuzzBudgetMs, type Random, random } from "../fakes/fuzz.ts";

function validStream(rng: Random): Uint8Array {
  const compressor = new SpdyHeaderCompressor();
  const frames: SpdyFrame[] = [];
  for (let i = 0, n = 1 + rng.int(6); i < n; i++) {
    const id = 1 + 2 * i;
    switch (rng.int(6)) {
      case 0:
        frames.push({
          type: "syn_stream",
          streamId: id,
          associatedToStreamId: 0,
          priority: 0,
          slot: 0,
          fin: false,
          unidirectional: false,
          headerBlock: compressor.compress(spdyHeaders({ streamtype: "stdin", port: String(i) })),
        });
        break;
      case 1:
        frames.push({
          type: "data",
          streamId: id,
          fin: rng.int(2) === 0,
          data: new Uint8Array(rng.int(300)),
        });
        break;
      case 2:
        frames.push({ type: "ping", id: rng.int(1000) });
        break;
      case 3:
        frames.push({ type: "rst_stream", streamId: id, status: 1 + rng.int(11) });
        break;
      case 4:
        frames.push({ type: "window_update", streamId: id, delta: rng.int(1 << 20) });
        break;
      default:
        frames.push({
          type: "settings",
          clearSettings: false,
          settings: [{ flags: 0, id: 4, value: 9 }],
        });
    }
  }
  return concatBytes(frames.map(encodeFrame));
}

function mutate(bytes: Uint8Array, rng: Random): Uint8Array {
  const out = bytes.slice();
  for (let i = 0, n = 1 + rng.int(8); i < n && out.length > 0; i++) {
    const at = rng.int(out.length);
    out[at] = rng.int(3) === 0 ? 0xff : rng.int(256);
  }
  return rng.int(4) === 0 ? out.subarray(0, rng.int(out.length + 1)) : out;
}

function input(rng: Random): Uint8Array {
  const kind = rng.int(3);
  if (kind === 0) return Uint8Array.from({ length: rng.int(200) }, () => rng.int(256));
  const valid = validStream(rng);
  return kind === 1 ? valid : mutate(valid, rng);
}

Deno.test("20 s of random and mutated inputs yield only frames or a clean protocol error", async () => {
  const seed = 0x5eed;
  const rng = random(seed);
  let frames = 0, errors = 0, clean = 0, headerErrors = 0;
  const count = await forBudget(fuzzBudgetMs(20), (i) => {
    const bytes = input(rng);
    const parser = new SpdyFrameParser({ maxControlPayload: 64 * 1024, maxDataPayload: 64 * 1024 });
    const decompressor = new SpdyHeaderDecompressor({ maxBlockBytes: 16 * 1024 });
    try {
      for (let at = 0; at < bytes.length;) {
        const step = 1 + rng.int(64);
        for (const frame of parser.push(bytes.subarray(at, at + step))) {
          frames++;
          if ("headerBlock" in frame) {
            try {
              decompressor.decompress(frame.headerBlock);
            } catch (err) {
              assert.ok(
                isSpdyProtocolError(err),
                `seed ${seed} input ${i}: header decoding threw ${err}`,
              );
              headerErrors++;
            }
          }
        }
        assert.ok(parser.bufferedBytes <= 8 + 64 * 1024, "the parser buffers at most one frame");
        at += step;
      }
      parser.finish();
      clean++;
    } catch (err) {
      assert.ok(isSpdyProtocolError(err), `seed ${seed} input ${i} threw ${err}`);
      errors++;
    }
  });
  console.log(
    `fuzz: seed ${seed}, ${count} inputs, ${frames} frames, ${clean} clean, ${errors} protocol ` +
      `errors, ${headerErrors} header errors`,
  );
  assert.ok(errors > 100 && clean > 100, "the corpus exercises both outcomes");
});

Deno.test("10 s of hostile byte streams each close only their own session, cleanly", async () => {
  const seed = 0xbad5eed;
  const rng = random(seed);
  const count = await forBudget(fuzzBudgetMs(10), async (i) => {
    const wire = scriptedDuplex();
    const session = new SpdySession(wire, { role: "server", windowUpdates: false });
    const bytes = input(rng);
    for (let at = 0; at < bytes.length;) {
      const step = 1 + rng.int(32);
      wire.feed(bytes.subarray(at, at + step));
      at += step;
    }
    wire.end();
    // Drain accepted streams so nothing waits on us.
    for (let s = await session.accept(); s; s = await session.accept()) s.reset();
    await session.closed;
    assert.ok(
      session.error === undefined || isSpdyProtocolError(session.error),
      `seed ${seed} stream ${i}: ${session.error}`,
    );
  });
  console.log(`fuzz: seed ${seed}, ${count} hostile sessions`);
  assert.ok(count >= 100, `only ${count} sessions in the budget`);
});
