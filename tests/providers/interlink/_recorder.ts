/**
 * A recording proxy on 127.0.0.1: every call passes to the reference plugin unchanged, and the
 * exact request and reply bodies are kept, so a test can show what went over the wire. It
 * forwards with `node:http` because the protocol's GET calls carry bodies, which `fetch` refuses.
 * @module
 */
import http from "node:http";
import { Buffer } from "node:buffer";

/** One call as it went over the wire. */
export interface Exchange {
  method: string;
  path: string;
  /** The request headers, lower-case names. */
  headers: Record<string, string>;
  /** The request body as sent. */
  request: string;
  status: number;
  /** The reply's content type. */
  contentType: string;
  /** The reply body as answered. */
  reply: string;
}

/** A running proxy. */
export interface Recorder {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Every call so far, in order. */
  exchanges: Exchange[];
  /** Stops listening. */
  close(): Promise<void>;
}

/** Starts a proxy to `target` (`http://127.0.0.1:<port>`). */
export async function startRecorder(target: string): Promise<Recorder> {
  const exchanges: Exchange[] = [];
  const to = new URL(target);
  // node:http rather than Deno.serve: Deno.serve drops the bodies of GET requests.
  const server = http.createServer(async (req, res) => {
    const request = await readAll(req);
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, String(v)]),
    );
    const answer = await forward(to, req.method ?? "GET", req.url ?? "/", headers, request);
    exchanges.push({
      method: req.method ?? "",
      path: new URL(req.url ?? "/", "http://x").pathname,
      headers,
      request,
      status: answer.status,
      contentType: answer.type,
      reply: answer.text,
    });
    res.writeHead(answer.status, { "content-type": answer.type });
    res.end(answer.text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

function forward(
  to: URL,
  method: string,
  path: string,
  headers: Record<string, string>,
  request: string,
): Promise<{ status: number; type: string; text: string }> {
  const body = Buffer.from(request);
  return new Promise((resolve, reject) => {
    const out = http.request({
      hostname: to.hostname,
      port: to.port,
      method,
      path,
      headers: { ...headers, "content-length": String(body.length), host: to.host },
    }, async (res) => {
      resolve({
        status: res.statusCode ?? 0,
        type: String(res.headers["content-type"] ?? ""),
        text: await readAll(res as AsyncIterable<Buffer>),
      });
    });
    out.on("error", reject);
    out.end(body);
  });
}
