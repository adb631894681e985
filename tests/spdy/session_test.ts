import assert from "node:assert/strict";
import { SpdySession } from "../../spdy/session.ts";
import { encodeFrame } from "../../spdy/frames.ts";
import { SpdyFrameParser } from "../../spdy/frame_parser.ts";
import { headerValue, SpdyHeaderCompressor, spdyHeaders } from "../../spdy/headers.ts";
import { isSpdyProtocolError, isSpdyStreamError } from "../../spdy/errors.ts";
import {
  concatBytes,
  memoryDuplexPair,
  pseudoRandomBytes,
  readAll,
  scriptedDuplex,
  sha256,
} from "../core/kubelet_api/streaming/_memory_duplex.ts";

function pair(options: { highWaterMark?: number } = {}) {
  const [a, b] = memoryDuplexPair(options.highWaterMark);
  const client = new SpdySession(a, { role: "client", streamHighWaterMark: options.highWaterMark });
  const server = new SpdySession(b, { role: "server", streamHighWaterMark: options.highWaterMark });
  return {
    client,
    server,
    clientWire: a,
    async close() {
      client.close();
      server.close();
      await Promise.all([client.closed, server.closed]);
    },
  };
}

/** Opens a stream from the client and accepts and replies to it on the server. */
async function openPair(s: ReturnType<typeof pair>, headers: Record<string, string>) {
  const accepted = s.server.accept().then(async (stream) => {
    await stream!.reply();
    return stream!;
  });
  const [client, server] = await Promise.all([s.client.openStream(spdyHeaders(headers)), accepted]);
  return { client, server };
}

async function writeAll(writable: WritableStream<Uint8Array>, bytes: Uint8Array, close = true) {
  const writer = writable.getWriter();
  for (let at = 0; at < bytes.length; at += 50_000) {
    await writer.write(bytes.subarray(at, at + 50_000));
  }
  if (close) await writer.close();
  else writer.releaseLock();
}

Deno.test("a client stream is accepted with its headers and replied to", async () => {
  const s = pair();
  const [opened, accepted] = await Promise.all([
    s.client.openStream(spdyHeaders({ streamtype: "error", requestid: "7" })),
    s.server.accept().then(async (stream) => {
      await stream!.reply();
      return stream!;
    }),
  ]);
  assert.equal(opened.id, 1);
  assert.equal(accepted.id, 1);
  assert.equal(headerValue(accepted.headers, "streamtype"), "error");
  assert.equal(headerValue(accepted.headers, "requestid"), "7");
  const second = s.client.openStream(spdyHeaders({ streamtype: "stdin" }));
  const next = await s.server.accept();
  await next!.reply();
  assert.equal((await second).id, 3, "client stream ids are odd and increasing");
  await s.close();
});

Deno.test("1 MiB crosses each way intact, with half-close ending each direction", async () => {
  const s = pair({ highWaterMark: 64 * 1024 });
  const up = pseudoRandomBytes(1 << 20, 1), down = pseudoRandomBytes(1 << 20, 2);
  const serverSide = (async () => {
    const stream = (await s.server.accept())!;
    await stream.reply();
    const [received] = await Promise.all([
      readAll(stream.readable),
      writeAll(stream.writable, down),
    ]);
    await stream.closed;
    return received;
  })();
  const stream = await s.client.openStream(spdyHeaders({ streamtype: "data" }));
  const [received] = await Promise.all([readAll(stream.readable), writeAll(stream.writable, up)]);
  assert.equal(await sha256(received), await sha256(down));
  assert.equal(await sha256(await serverSide), await sha256(up));
  await stream.closed;
  assert.equal(s.client.streamCount, 0, "a stream finished both ways is forgotten");
  await s.close();
});

Deno.test("a half-closed stream keeps flowing the other way", async () => {
  const s = pair();
  const { client: stream, server } = await openPair(s, { streamtype: "stdin" });
  await stream.writable.close();
  assert.equal((await readAll(server.readable)).length, 0);
  await writeAll(server.writable, new TextEncoder().encode("still here"));
  assert.equal(new TextDecoder().decode(await readAll(stream.readable)), "still here");
  await s.close();
});

Deno.test("a reset ends both sides of a stream with a stream error", async () => {
  const s = pair();
  const { client: stream, server } = await openPair(s, { streamtype: "data" });
  const reading = readAll(server.readable).catch((err) => err);
  stream.reset();
  const err = await reading;
  assert.ok(isSpdyStreamError(err) && err.code === "reset_by_peer" && err.status === 5);
  await server.closed;
  await assert.rejects(server.writable.getWriter().write(Uint8Array.of(1)), isSpdyStreamError);
  await s.close();
});

Deno.test("ping is answered and measures a round trip", async () => {
  const s = pair();
  const rtt = await s.client.ping();
  assert.ok(rtt >= 0);
  assert.ok((await s.server.ping()) >= 0, "server pings use even ids and are answered too");
  await s.close();
});

Deno.test("after GOAWAY no new streams open, and graceful shutdown lets output finish", async () => {
  const s = pair();
  const { client: stream, server } = await openPair(s, { streamtype: "stdout" });
  const reading = readAll(stream.readable);
  await writeAll(server.writable, pseudoRandomBytes(200_000, 3));
  const shutdown = s.server.shutdown({ timeoutMs: 5000 });
  assert.equal((await reading).length, 200_000, "output written before shutdown arrives whole");
  await stream.writable.close();
  await new Promise((resolve) => setTimeout(resolve, 10));
  await assert.rejects(s.client.openStream(spdyHeaders({})), isSpdyStreamError);
  s.client.close();
  await shutdown;
  await s.close();
});

Deno.test("SETTINGS and WINDOW_UPDATE are accepted and never stall a sender", async () => {
  const wire = scriptedDuplex();
  const server = new SpdySession(wire, { role: "server", windowUpdates: false });
  const compressor = new SpdyHeaderCompressor();
  wire.feed(
    encodeFrame({
      type: "settings",
      clearSettings: false,
      settings: [{ flags: 0, id: 7, value: 1 }],
    }),
  );
  wire.feed(encodeFrame({
    type: "syn_stream",
    streamId: 1,
    associatedToStreamId: 0,
    priority: 0,
    slot: 0,
    fin: false,
    unidirectional: false,
    headerBlock: compressor.compress(spdyHeaders({ streamtype: "stdout" })),
  }));
  wire.feed(encodeFrame({ type: "window_update", streamId: 1, delta: 1 }));
  const stream = (await server.accept())!;
  await writeAll(stream.writable, pseudoRandomBytes(300_000, 4));
  const frames = new SpdyFrameParser().push(concatBytes(wire.written));
  const sent = frames.filter((f) => f.type === "data").reduce(
    (n, f) => n + (f.type === "data" ? f.data.length : 0),
    0,
  );
  assert.equal(sent, 300_000, "a 1-byte window did not hold the sender back");
  assert.deepEqual(frames[0].type, "syn_reply", "the reply precedes the first DATA");
  server.close();
  await server.closed;
});

Deno.test("a garbage byte stream closes that connection cleanly with GOAWAY", async () => {
  const wire = scriptedDuplex();
  const server = new SpdySession(wire, { role: "server" });
  wire.feed(
    pseudoRandomBytes(64, 5).map((b, i) => i === 0 ? 0x80 : i === 1 ? 0x03 : i < 4 ? 0x63 : b),
  );
  await server.closed;
  assert.ok(isSpdyProtocolError(server.error), String(server.error));
  const frames = new SpdyFrameParser().push(concatBytes(wire.written));
  assert.deepEqual(frames, [{ type: "goaway", lastGoodStreamId: 0, status: 1 }]);
  assert.equal(await server.accept(), null);
});

Deno.test("streams with the wrong parity or a reused id are reset with PROTOCOL_ERROR", async () => {
  const wire = scriptedDuplex();
  const server = new SpdySession(wire, { role: "server" });
  const compressor = new SpdyHeaderCompressor();
  const syn = (streamId: number) =>
    encodeFrame({
      type: "syn_stream",
      streamId,
      associatedToStreamId: 0,
      priority: 0,
      slot: 0,
      fin: false,
      unidirectional: false,
      headerBlock: compressor.compress(spdyHeaders({ streamtype: "x" })),
    });
  wire.feed(concatBytes([syn(3), syn(2), syn(3), syn(5)]));
  assert.equal((await server.accept())!.id, 3);
  assert.equal((await server.accept())!.id, 5);
  await new Promise((resolve) => setTimeout(resolve, 10));
  const resets = new SpdyFrameParser().push(concatBytes(wire.written));
  assert.deepEqual(resets, [
    { type: "rst_stream", streamId: 2, status: 1 },
    { type: "rst_stream", streamId: 3, status: 1 },
  ]);
  server.close();
  await server.closed;
});

Deno.test("a connection that closes fails its open streams on both ends", async () => {
  const s = pair();
  const { client: stream, server } = await openPair(s, { streamtype: "data" });
  const reading = readAll(server.readable).catch((err) => err);
  s.client.close();
  const err = await reading;
  assert.ok(isSpdyStreamError(err) && err.code === "connection_closed");
  await assert.rejects(readAll(stream.readable), isSpdyStreamError);
  await s.close();
});

Deno.test("a peer flooding PINGs without reading loses its connection", async () => {
  const [a, b] = memoryDuplexPair(1024);
  const server = new SpdySession(b, { role: "server" });
  const writer = (async () => {
    for (let i = 0; i < 5000 && !server.isClosed; i++) {
      await Promise.race([a.write(encodeFrame({ type: "ping", id: 2 * i + 1 })), server.closed]);
    }
  })();
  await server.closed;
  assert.ok(isSpdyProtocolError(server.error) && server.error.code === "flood");
  a.close();
  await writer;
});

Deno.test("a connection buffers at most maxBufferedBytes across streams nobody reads", async () => {
  const [a, b] = memoryDuplexPair(64 * 1024);
  const client = new SpdySession(a, { role: "client" });
  // Each stream may hold 1 MiB; the connection as a whole only 64 KiB.
  const server = new SpdySession(b, { role: "server", maxBufferedBytes: 64 * 1024 });
  const chunk = pseudoRandomBytes(16 * 1024, 3);
  const opened = [];
  const accepted = [];
  for (let i = 0; i < 16; i++) {
    const [stream, peer] = await Promise.all([
      client.openStream(spdyHeaders({ streamtype: "data" })),
      server.accept().then(async (s) => {
        await s!.reply();
        return s!;
      }),
    ]);
    opened.push(stream);
    accepted.push(peer);
  }
  const writes = opened.map((stream) => {
    const writer = stream.writable.getWriter();
    return writer.write(chunk).catch(() => {}).finally(() => writer.releaseLock());
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.ok(
    server.bufferedBytes >= 64 * 1024 && server.bufferedBytes < 64 * 1024 + chunk.length,
    `buffered ${server.bufferedBytes} bytes of ${16 * chunk.length} sent`,
  );
  // Reading one stream makes room: the connection moves again.
  const reader = accepted[0].readable.getReader();
  assert.equal((await reader.read()).value?.length, chunk.length);
  reader.releaseLock();
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(server.bufferedBytes >= 64 * 1024, "the next stream's data came in");
  client.close();
  server.close();
  await Promise.all([client.closed, server.closed, ...writes]);
});

Deno.test("data read as it arrives is acknowledged with WINDOW_UPDATE", async () => {
  const [a, b] = memoryDuplexPair();
  const client = new SpdySession(a, { role: "client" });
  const server = new SpdySession(b, { role: "server" });
  const [opened, accepted] = await Promise.all([
    client.openStream(spdyHeaders({ streamtype: "stdin" })),
    server.accept().then(async (s) => {
      await s!.reply();
      return s!;
    }),
  ]);
  // The server's reader is always waiting, so every chunk is handed over at once.
  const received = readAll(accepted.readable);
  await writeAll(opened.writable, pseudoRandomBytes(256 * 1024, 4));
  assert.equal((await received).length, 256 * 1024);
  const parser = new SpdyFrameParser();
  const acknowledged = [...parser.push(concatBytes(b.written))]
    .flatMap((f) => f.type === "window_update" && f.streamId === opened.id ? [f.delta] : [])
    .reduce((n, d) => n + d, 0);
  assert.ok(acknowledged >= 224 * 1024, `${acknowledged} of 256 KiB acknowledged`);
  client.close();
  server.close();
  await Promise.all([client.closed, server.closed]);
});
