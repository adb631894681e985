/**
 * HTTP upgrades (SPDY/3.1, WebSocket) through the same Hono app as plain requests: the
 * listener's `upgrade` event becomes a `Request` with the raw socket in the environment, so
 * authentication, authorization and routing are the same; a streaming route takes the socket
 * over, and any other answer (401, 403, 404, 400, 501) is written back as HTTP/1.1 and the
 * connection closed.
 * @module
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Hono } from "hono";
import type { Logger } from "../../base/log.ts";
import type { KubeletEnv, UpgradeSlot } from "./types.ts";

/** Runs one upgrade request through `app`; resolves once answered or handed over. */
export async function handleUpgrade(
  app: Hono<KubeletEnv>,
  incoming: IncomingMessage,
  socket: Duplex,
  head: Uint8Array,
  log: Logger,
): Promise<void> {
  // Until a handler owns the socket, a reset by the peer must not become an uncaught error.
  const ignore = () => {};
  socket.on("error", ignore);
  try {
    const slot: UpgradeSlot = { socket, head, taken: false };
    const response = await app.fetch(requestFrom(incoming), { incoming, upgrade: slot });
    if (slot.taken) return;
    await writeResponse(socket, response);
  } catch (err) {
    log.warn("upgrade request {path} failed: {err}", { path: incoming.url, err });
    socket.destroy();
  } finally {
    socket.off("error", ignore);
  }
}

/** A body-less `Request` with the method, URL and headers of `incoming`. */
export function requestFrom(incoming: IncomingMessage): Request {
  const headers = new Headers();
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
    try {
      headers.append(incoming.rawHeaders[i], incoming.rawHeaders[i + 1]);
    } catch {
      // A header value fetch refuses (control characters): leave it out.
    }
  }
  const host = incoming.headers.host ?? "localhost";
  return new Request(new URL(incoming.url ?? "/", `https://${host}`), {
    method: incoming.method ?? "GET",
    headers,
  });
}

/** Writes `response` onto `socket` as an HTTP/1.1 answer and closes the connection. */
export async function writeResponse(socket: Duplex, response: Response): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  const lines = [
    `HTTP/1.1 ${response.status} ${response.statusText || reasonPhrase(response.status)}`,
  ];
  response.headers.forEach((value, name) => {
    if (!["content-length", "connection", "transfer-encoding"].includes(name)) {
      lines.push(`${name}: ${value}`);
    }
  });
  lines.push(`content-length: ${body.length}`, "connection: close", "", "");
  if (socket.destroyed) return;
  await new Promise<void>((resolve) => {
    socket.end(concatBytes(new TextEncoder().encode(lines.join("\r\n")), body), () => resolve());
    socket.once("error", () => resolve());
  });
}

function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

const PHRASES: Record<number, string> = {
  200: "OK",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  422: "Unprocessable Entity",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
};

function reasonPhrase(status: number): string {
  return PHRASES[status] ?? "Unknown";
}
