/**
 * The agent's connection to vkubelet: TLS to the kubelet API port trusting only the CA (or
 * certificate) it was given, `GET /tunnel` with the upgrade and the credential, and the
 * upgraded connection as a byte duplex for the multiplexer.
 * @module
 */
import type { ByteDuplex } from "../../spdy/byte_duplex.ts";
import { CREDENTIAL_HEADER, TUNNEL_PATH, TUNNEL_UPGRADE } from "../../core/tunnel/protocol.ts";

/** Where and how to dial. */
export interface DialTarget {
  server: URL;
  caPem: string;
  credential: string;
}

/** Dials vkubelet and upgrades; throws a sentence saying what was refused. */
export async function dialTunnel(target: DialTarget): Promise<ByteDuplex> {
  const hostname = target.server.hostname.replace(/^\[|\]$/g, "");
  const port = Number(target.server.port || 443);
  // TCP first, for TCP_NODELAY (a TLS connection has no such setter): without it each stream's
  // small header and answer frames wait on the peer's delayed ACK, ~40 ms per connection.
  const tcp = await Deno.connect({ hostname, port });
  tcp.setNoDelay(true);
  const conn = await Deno.startTls(tcp, { hostname, caCerts: [target.caPem] });
  try {
    const request = `GET ${TUNNEL_PATH} HTTP/1.1\r\nHost: ${target.server.host}\r\n` +
      `Connection: Upgrade\r\nUpgrade: ${TUNNEL_UPGRADE}\r\n` +
      `${CREDENTIAL_HEADER}: ${target.credential}\r\n\r\n`;
    await conn.write(new TextEncoder().encode(request));
    const reader = conn.readable.getReader();
    let buffered: Uint8Array = new Uint8Array(0);
    let end = -1;
    while ((end = headEnd(buffered)) < 0) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${target.server} closed the connection before answering`);
      buffered = join(buffered, value);
      if (buffered.length > 16384) throw new Error(`${target.server} sent an oversized answer`);
    }
    const head = new TextDecoder().decode(buffered.subarray(0, end));
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
    if (status !== 101) {
      const body = new TextDecoder().decode(buffered.subarray(end + 4)).trim();
      throw new Error(
        `${target.server} refused the tunnel (${head.split("\r\n")[0]})${body ? `: ${body}` : ""}`,
      );
    }
    const left = buffered.subarray(end + 4);
    const readable = new ReadableStream<Uint8Array>({
      start(controller) {
        if (left.length) controller.enqueue(left);
      },
      async pull(controller) {
        try {
          const { value, done } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          controller.error(err);
        }
      },
      cancel: () => void reader.cancel().catch(() => {}),
    }, { highWaterMark: 0 });
    const writer = conn.writable.getWriter();
    let closed = false;
    return {
      readable,
      write: (bytes) => writer.write(bytes),
      close: () => {
        if (closed) return;
        closed = true;
        try {
          conn.close();
        } catch {
          // closed already
        }
      },
    };
  } catch (err) {
    try {
      conn.close();
    } catch {
      // closed already
    }
    throw err;
  }
}

function headEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

function join(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
