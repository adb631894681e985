/**
 * The streaming bench's pod: a TCP echo server on 127.0.0.1:PORT (every byte a client sends
 * comes back; a client's half-close ends its answer), so it is the sink and the source of a
 * port-forward transfer. The process provider runs it as the pod's container:
 *
 *   deno run --allow-net=127.0.0.1 bench/tools/stream_server.ts PORT
 * @module
 */

/** Serves echo connections on 127.0.0.1:`port` until `signal` aborts. */
export async function serveEcho(port: number, signal?: AbortSignal): Promise<void> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port });
  signal?.addEventListener("abort", () => listener.close(), { once: true });
  const open = new Set<Promise<void>>();
  try {
    for await (const conn of listener) {
      const done = conn.readable.pipeTo(conn.writable).catch(() => {
        try {
          conn.close();
        } catch {
          // closed already
        }
      });
      open.add(done);
      done.finally(() => open.delete(done));
    }
  } catch (err) {
    if (!signal?.aborted) throw err;
  }
  await Promise.all(open);
}

if (import.meta.main) {
  const port = Number(Deno.args[0]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RangeError("usage: stream_server.ts PORT (a TCP port number, 1-65535)");
  }
  await serveEcho(port);
}
