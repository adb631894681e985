/**
 * A connection to a remote pod's port (`RemotePodNetworks.listen`: socat listening inside the
 * pod's namespace, handing each connection to a Unix socket of vkubelet's) carries each direction
 * on its own: a client that half-closes after its request (`nc -N`, HTTP/1.0-style senders, RPC
 * clients that shut their side) still gets the whole answer, and the answer's end reaches it.
 * The relay listens in the test's own namespace (still under nsenter, as in a pod's); the tunnel
 * is a handler that reads the request to its end before it answers. Root only.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { PodNetworks } from "../../../providers/process/network/pod_network.ts";
import {
  type RelayedConn,
  RemotePodNetworks,
} from "../../../providers/process/network/tunnel_network.ts";

const skip = Deno.uid() !== 0 ? "needs root (nsenter --net)" : undefined;
if (skip) console.warn(`tunnel listen half-close test skipped: ${skip}`);

/** A port free on 127.0.0.1 now. */
function freePort(): number {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  return port;
}

/** Reads `conn` to its end, or gives up after `ms` (then `ended` is false). */
async function readToEnd(conn: Deno.Conn, ms: number) {
  const chunks: string[] = [];
  const decoder = new TextDecoder();
  const timer = setTimeout(() => conn.close(), ms);
  try {
    const buffer = new Uint8Array(4096);
    for (let n; (n = await conn.read(buffer)) !== null;) {
      chunks.push(decoder.decode(buffer.subarray(0, n), { stream: true }));
    }
    return { text: chunks.join(""), ended: true };
  } catch {
    return { text: chunks.join(""), ended: false };
  } finally {
    clearTimeout(timer);
  }
}

Deno.test({
  name: "a client of a remote pod that half-closes after its request gets the whole answer",
  ignore: skip !== undefined,
  async fn() {
    const stateDir = await Deno.makeTempDir({ prefix: "vk-half-close-" });
    await Deno.mkdir(join(stateDir, "remote"));
    const networks = new RemotePodNetworks({} as PodNetworks, stateDir);
    const port = freePort();
    const handled: Promise<void>[] = [];
    // The tunnel's side: the request read to its end, then the answer, then this side's end.
    const answer = async (conn: RelayedConn) => {
      try {
        const request = await new Response(conn.readable).text();
        const writer = conn.writable.getWriter();
        await writer.write(new TextEncoder().encode(`got ${request.length} bytes: ${request}`));
        await writer.close();
      } finally {
        conn.close();
      }
    };
    const listening = await networks.listen(
      `/proc/${Deno.pid}/ns/net`,
      port,
      (conn) => void handled.push(answer(conn).catch(() => {})),
    );
    let client: Deno.TcpConn | undefined;
    try {
      client = await Deno.connect({ hostname: "127.0.0.1", port });
      await client.write(new TextEncoder().encode("request"));
      await client.closeWrite();
      const { text, ended } = await readToEnd(client, 3000);
      assert.equal(text, "got 7 bytes: request", "the answer was lost after the half-close");
      assert.ok(ended, "the answer's end did not reach the client");
    } finally {
      try {
        client?.close();
      } catch {
        // closed by readToEnd's timer
      }
      await Promise.all(handled);
      await listening.close();
      await Deno.remove(stateDir, { recursive: true });
    }
  },
});
