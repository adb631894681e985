/**
 * A connection dialed inside a network namespace (`dialInNetns`: a remote pod's Service calls,
 * port-forward, httpGet probes) carries each side's end to the other: when the Service closes
 * its side, the caller reads EOF at once although it has not closed its own side (an HTTP/1.0
 * or `Connection: close` reader that reads to EOF), and a caller that half-closes after its
 * request still gets the whole answer. The namespace is the test's own (the relay still runs
 * under nsenter, as for a pod's); root only.
 * @module
 */
import assert from "node:assert/strict";
import { dialInNetns, httpGetInNetns } from "../../../providers/process/network/dial.ts";

const skip = Deno.uid() !== 0 ? "needs root (nsenter --net)" : undefined;
if (skip) console.warn(`dial EOF tests skipped: ${skip}`);

const encoder = new TextEncoder();
const netns = () => `/proc/${Deno.pid}/ns/net`;

/** A server on 127.0.0.1 that runs `serve` on each connection and then closes it. */
function serverOf(serve: (conn: Deno.Conn) => Promise<void>) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const served: Promise<void>[] = [];
  const accepting = (async () => {
    for await (const conn of listener) {
      served.push(serve(conn).catch(() => {}).finally(() => conn.close()));
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async close() {
      listener.close();
      await accepting;
      await Promise.all(served);
    },
  };
}

/** Reads `readable` to its end, or gives up after `ms` (then `ended` is false). */
async function readToEnd(readable: ReadableStream<Uint8Array>, ms: number) {
  const reader = readable.getReader();
  let text = "";
  const decoder = new TextDecoder();
  const deadline = Date.now() + ms;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    while (true) {
      const left = deadline - Date.now();
      const next = await Promise.race([
        reader.read(),
        new Promise<"late">((r) => timer = setTimeout(() => r("late"), Math.max(0, left))),
      ]);
      clearTimeout(timer);
      if (next === "late") return { text, ended: false };
      if (next.done) return { text, ended: true };
      text += decoder.decode(next.value, { stream: true });
    }
  } finally {
    reader.releaseLock();
  }
}

Deno.test({
  name:
    "a Service that answers and closes ends the dialed connection for a caller that still writes",
  ignore: skip !== undefined,
  async fn() {
    const server = serverOf(async (conn) => {
      await conn.read(new Uint8Array(64));
      await conn.write(encoder.encode("HTTP/1.0 200 OK\r\n\r\nanswer"));
    });
    const conn = dialInNetns(netns(), "127.0.0.1", server.port);
    const writer = conn.writable.getWriter();
    try {
      await writer.write(encoder.encode("GET / HTTP/1.0\r\n\r\n"));
      const started = Date.now();
      const { text, ended } = await readToEnd(conn.readable, 3000);
      assert.equal(text, "HTTP/1.0 200 OK\r\n\r\nanswer", "the answer did not come whole");
      assert.ok(ended, "the Service closed its side but the caller saw no EOF within 3 s");
      assert.ok(Date.now() - started < 1000, `EOF took ${Date.now() - started} ms`);
      // The caller's own close then ends the relay.
      await writer.close();
      assert.equal((await conn.done).code, 0);
    } finally {
      conn.close();
      await conn.done;
      await server.close();
    }
  },
});

Deno.test({
  name: "a caller that half-closes after its request still gets the whole answer through the dial",
  ignore: skip !== undefined,
  async fn() {
    // The server answers only once the request ended: it reads to EOF first.
    const server = serverOf(async (conn) => {
      let got = 0;
      for (let n; (n = await conn.read(new Uint8Array(64))) !== null;) got += n;
      await conn.write(encoder.encode(`got ${got} bytes`));
    });
    const conn = dialInNetns(netns(), "127.0.0.1", server.port);
    try {
      const writer = conn.writable.getWriter();
      await writer.write(encoder.encode("request"));
      await writer.close();
      const { text, ended } = await readToEnd(conn.readable, 3000);
      assert.equal(text, "got 7 bytes");
      assert.ok(ended, "no EOF after the answer");
      assert.equal((await conn.done).code, 0);
    } finally {
      conn.close();
      await conn.done;
      await server.close();
    }
  },
});

Deno.test({
  name: "an httpGet probe inside a namespace returns when the server closes, not at its timeout",
  ignore: skip !== undefined,
  async fn() {
    const server = serverOf(async (conn) => {
      await conn.read(new Uint8Array(1024));
      await conn.write(encoder.encode("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nok"));
    });
    try {
      const started = Date.now();
      const result = await httpGetInNetns(
        netns(),
        { host: "127.0.0.1", port: server.port, path: "/", headers: new Headers() },
        5000,
      );
      const took = Date.now() - started;
      assert.deepEqual(result, { status: 200, body: "ok" });
      assert.ok(took < 1000, `the probe took ${took} ms (its timeout is 5000 ms)`);
    } finally {
      await server.close();
    }
  },
});
