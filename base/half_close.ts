/**
 * A connection (TCP, Unix) as two byte streams that half-close: `Deno.Conn`'s own `readable` and
 * `writable` close the whole connection when either ends, so a client that sends its request and
 * shuts its side (an HTTP/1.0 client, `nc -N`) would lose the answer still coming through the
 * tunnel. Here the reader's EOF closes nothing and closing the writer shuts only this side
 * (`closeWrite`); the owner closes the connection once both directions are done. The tunnel's
 * two ends use it: the agent's relays (app/agent/) and the process provider's listeners at a
 * remote pod's IP (providers/process/network/tunnel_network.ts, through the kit).
 * @module
 */

/** `conn`'s two directions, each ending on its own; see the module doc. */
export function halfClosing(conn: Deno.Conn): {
  readable: ReadableStream<Uint8Array>;
  writable: WritableStream<Uint8Array>;
} {
  const readable = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const buffer = new Uint8Array(64 * 1024);
      try {
        const n = await conn.read(buffer);
        if (n === null) controller.close();
        else controller.enqueue(buffer.subarray(0, n));
      } catch (err) {
        controller.error(err);
      }
    },
  }, { highWaterMark: 0 });
  const writable = new WritableStream<Uint8Array>({
    async write(chunk) {
      for (let done = 0; done < chunk.length;) done += await conn.write(chunk.subarray(done));
    },
    async close() {
      await conn.closeWrite().catch(() => {});
    },
  });
  return { readable, writable };
}
