import assert from "node:assert/strict";
import { encodeFrame, Flag, FrameType, isTunnelProtocolError } from "../../core/tunnel/frame.ts";
import { INITIAL_WINDOW, MuxSession, type MuxStream } from "../../core/tunnel/session.ts";
import { duplexPair } from "./_pair.ts";

/** Echoes every inbound stream back, closing its half when the peer closes its own. */
function echo(stream: MuxStream): void {
  void stream.readable.pipeTo(stream.writable).catch(() => {});
}

function sessions(onServerStream: (s: MuxStream) => void = echo) {
  const [a, b] = duplexPair();
  const client = new MuxSession(a, { client: true });
  const server = new MuxSession(b, { client: false, onStream: onServerStream });
  return {
    client,
    server,
    [Symbol.asyncDispose]: async () => {
      client.close();
      server.close();
      await Promise.all([client.closed, server.closed]);
    },
  };
}

function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

async function roundTrip(stream: MuxStream, data: Uint8Array): Promise<Uint8Array> {
  const writer = stream.writable.getWriter();
  const sent = (async () => {
    await writer.write(data);
    await writer.close();
  })();
  sent.catch(() => {}); // a reset fails the read below as well; that error is the one reported
  const back = new Uint8Array(await new Response(stream.readable).arrayBuffer());
  await sent;
  return back;
}

Deno.test("a hundred streams at once each get their own bytes back", async () => {
  await using pair = sessions();
  const results = await Promise.all(Array.from({ length: 100 }, async (_, i) => {
    const data = bytes(50_000 + i, i);
    return { data, back: await roundTrip(pair.client.open(), data) };
  }));
  for (const { data, back } of results) assert.deepEqual(back, data);
  assert.equal(pair.client.streamCount, 0, "finished streams are forgotten");
});

Deno.test("a stream larger than the window arrives whole in both directions", async () => {
  await using pair = sessions();
  const data = bytes(3 * INITIAL_WINDOW + 17, 7);
  assert.deepEqual(await roundTrip(pair.client.open(), data), data);
});

Deno.test("a reader that stops reading stalls only its own stream's writer, at the window", async () => {
  const stalled: MuxStream[] = [];
  await using pair = sessions((s) => {
    if (stalled.length === 0) stalled.push(s); // never read
    else echo(s);
  });
  const slow = pair.client.open();
  const writer = slow.writable.getWriter();
  let written = 0;
  const chunk = new Uint8Array(16 * 1024);
  const writing = (async () => {
    for (let i = 0; i < 64; i++) {
      await writer.write(chunk);
      written += chunk.length;
    }
  })();
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(written <= INITIAL_WINDOW, `wrote ${written} bytes past a window of ${INITIAL_WINDOW}`);
  assert.ok(written >= INITIAL_WINDOW - chunk.length, `only ${written} bytes written`);
  // Another stream on the same session still flows.
  const data = bytes(100_000, 3);
  assert.deepEqual(await roundTrip(pair.client.open(), data), data);
  // Reading the stalled stream releases the writer.
  const drained = new Response(stalled[0].readable).arrayBuffer();
  await writing;
  await writer.close();
  assert.equal((await drained).byteLength, 64 * chunk.length);
});

Deno.test("half-close: each side ends its writing and still reads the other's", async () => {
  let server!: MuxStream;
  const opened = Promise.withResolvers<void>();
  await using pair = sessions((s) => {
    server = s;
    opened.resolve();
  });
  const client = pair.client.open();
  const cw = client.writable.getWriter();
  await cw.write(new TextEncoder().encode("question"));
  await cw.close();
  await opened.promise;
  assert.equal(await new Response(server.readable).text(), "question");
  const sw = server.writable.getWriter();
  await sw.write(new TextEncoder().encode("answer after the client's FIN"));
  await sw.close();
  assert.equal(await new Response(client.readable).text(), "answer after the client's FIN");
});

Deno.test("a reset stream fails on the other end with a clear error, the session lives", async () => {
  await using pair = sessions((s) => s.reset());
  const stream = pair.client.open();
  await assert.rejects(new Response(stream.readable).arrayBuffer(), /reset by the peer/);
  const data = bytes(10, 1);
  const other = pair.client.open();
  // The server resets every stream: the session itself is still open.
  await assert.rejects(roundTrip(other, data), /reset by the peer/);
  assert.ok(await pair.client.ping() >= 0);
});

Deno.test("streams over the inbound cap are reset, not queued", async () => {
  const [a, b] = duplexPair();
  const held: MuxStream[] = [];
  const server = new MuxSession(b, {
    client: false,
    maxInboundStreams: 2,
    onStream: (s) => held.push(s),
  });
  const client = new MuxSession(a, { client: true });
  client.open();
  client.open();
  const third = client.open();
  await assert.rejects(new Response(third.readable).arrayBuffer(), /reset by the peer/);
  assert.equal(held.length, 2);
  client.close();
  server.close();
  await Promise.all([client.closed, server.closed]);
});

/** A session on one end, raw bytes on the other. */
async function badFrame(frame: Uint8Array, before: Uint8Array[] = []) {
  const [a, b] = duplexPair();
  const server = new MuxSession(b, { client: false, onStream: () => {} });
  const reply = new Response(a.readable).arrayBuffer();
  for (const f of before) await a.write(f);
  await a.write(frame).catch(() => {});
  const err = await server.closed;
  a.close();
  return { err, reply: new Uint8Array(await reply) };
}

Deno.test("bad frames end the session with a clear error and a go-away, nothing thrown", async (t) => {
  const cases: [string, Uint8Array, RegExp, Uint8Array[]?][] = [
    ["wrong version", Uint8Array.of(1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0), /version 1/],
    ["unknown type", Uint8Array.of(0, 9, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0), /unknown type 9/],
    [
      "data past the window",
      encodeFrame(FrameType.data, Flag.syn, 1, INITIAL_WINDOW + 1),
      /larger than the window/,
    ],
    ["data on stream 0", encodeFrame(FrameType.data, 0, 0, Uint8Array.of(1)), /names stream 0/],
    [
      "a stream opened twice",
      encodeFrame(FrameType.windowUpdate, Flag.syn, 1, 0),
      /opened twice/,
      [encodeFrame(FrameType.windowUpdate, Flag.syn, 1, 0)],
    ],
    [
      "the server's own parity",
      encodeFrame(FrameType.windowUpdate, Flag.syn, 2, 0),
      /this end's parity/,
    ],
    [
      "data after FIN",
      encodeFrame(FrameType.data, 0, 1, Uint8Array.of(1)),
      /after its FIN/,
      [encodeFrame(FrameType.windowUpdate, Flag.syn | Flag.fin, 1, 0)],
    ],
  ];
  for (const [name, frame, message, before] of cases) {
    await t.step(name, async () => {
      const { err, reply } = await badFrame(frame, before);
      assert.ok(isTunnelProtocolError(err), `expected a protocol error, got ${err}`);
      assert.match(err.message, message);
      const goAway = encodeFrame(FrameType.goAway, 0, 0, 1);
      const tail = reply.subarray(reply.length - goAway.length);
      assert.deepEqual(tail, goAway, "the peer is told go-away(protocol error)");
    });
  }
});

Deno.test("a truncated transport ends every open stream with an error", async () => {
  const [a, b] = duplexPair();
  const server = new MuxSession(b, { client: false, onStream: () => {} });
  const client = new MuxSession(a, { client: true });
  const stream = client.open();
  b.close();
  await assert.rejects(new Response(stream.readable).arrayBuffer(), /closed/);
  await Promise.all([client.closed, server.closed]);
  assert.throws(() => client.open(), /The tunnel is closed/);
});
