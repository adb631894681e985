/**
 * The kubelet API server (real `node:https` on 127.0.0.1, self-signed certificate, anonymous
 * access allowed) with the streaming handler and a provider, plus raw TLS clients that speak
 * the upgrade by hand: a SPDY client built on our own session in the client role, and npm `ws`.
 * @module
 */
import tls from "node:tls";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
// @ts-types="@types/ws"
import { WebSocket } from "ws";
import { type Clock, realClock } from "../../base/clock.ts";
import { getLogger } from "../../base/log.ts";
import type { Provider } from "../../provider/mod.ts";
import { alwaysAllow, KubeletServer } from "../../core/kubelet_api/mod.ts";
import { selfSignedCertificate } from "../../x509/mod.ts";
import {
  createStreamingHandler,
  type KubeletStreamingHandler,
  type StreamingHandlerOptions,
} from "../../core/kubelet_api/streaming/handler.ts";
import { duplexFromNodeSocket } from "../../spdy/node_socket_duplex.ts";
import { SpdySession } from "../../spdy/session.ts";
import { createProvider, type MockProvider } from "../../providers/mock/mod.ts";

export const log = getLogger(["vkubelet", "test", "streaming"]);
export const NODE = "vk-stream";

/** A pod for the mock. */
export function streamingPod(name = "web", uid = `uid-${name}`): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "default", name, uid },
    spec: {
      nodeName: NODE,
      containers: [{ name: "app", image: "busybox", stdin: true }],
    },
  };
}

/**
 * `provider` with some methods replaced (or removed with `undefined`); the rest are bound to
 * it, so that its private fields keep working.
 */
export function overrideProvider(provider: Provider, overrides: Partial<Provider>): Provider {
  return new Proxy(provider, {
    get(target, name, receiver) {
      if (Object.hasOwn(overrides, name)) return overrides[name as keyof Provider];
      const value = Reflect.get(target, name, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A running server. */
export interface HandlerServer extends AsyncDisposable {
  port: number;
  mock: MockProvider;
  handler: KubeletStreamingHandler;
}

/** Options for {@link startHandlerServer}. */
export interface HandlerServerOptions extends Partial<StreamingHandlerOptions> {
  /** Wraps the mock (to record or change what the handler sees). */
  provider?: (mock: MockProvider) => Provider;
  clock?: Clock;
}

/** Starts the server with one pod, `default/web`. */
export async function startHandlerServer(
  options: HandlerServerOptions = {},
): Promise<HandlerServer> {
  const clock = options.clock ?? realClock;
  const shutdown = new AbortController();
  const mock = createProvider({}, {
    nodeName: NODE,
    log,
    clock,
    internalIp: "127.0.0.1",
    daemonPort: 0,
    signal: shutdown.signal,
  }) as MockProvider;
  const pods = [streamingPod()];
  for (const pod of pods) await mock.createPod(pod, {});
  const handler = createStreamingHandler({ log, clock, lingerMs: 2_000, ...options });
  const server = new KubeletServer({
    provider: options.provider ? options.provider(mock) : mock,
    nodeName: NODE,
    podCache: () => pods,
    log,
    clock,
    auth: { accessReviewer: alwaysAllow, anonymous: true },
    streaming: handler,
    hostname: "127.0.0.1",
    port: 0,
    certificates: selfSignedCertificate({
      nodeName: NODE,
      dnsNames: ["localhost"],
      ipAddresses: ["127.0.0.1"],
      clock: realClock,
      log,
    }),
    shutdownGraceMs: 1_000,
  });
  const running = server.run(shutdown.signal);
  await Promise.race([server.ready, running]);
  return {
    port: server.address!.port,
    mock,
    handler,
    async [Symbol.asyncDispose]() {
      shutdown.abort();
      await running;
      await handler.drained();
      await mock.close();
    },
  };
}

/** The answer to a hand-written upgrade request. */
export interface RawAnswer {
  status: number;
  headers: Array<[string, string]>;
  /** The body of a refusal. */
  body: string;
  /** After a 101 to SPDY: a client session on the connection. */
  session?: SpdySession;
  /** After a 101 to anything else: bytes read past the answer's head. */
  rest: Uint8Array;
  socket: tls.TLSSocket;
}

/** Opens TLS to the server; resolves once the handshake is done. */
export function connectTls(port: number): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: "127.0.0.1",
      port,
      rejectUnauthorized: false,
      ALPNProtocols: ["http/1.1"],
    }, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Sends `head` (request line and headers, no blank line) and reads the answer's head. */
export async function rawUpgrade(port: number, head: string[]): Promise<RawAnswer> {
  const socket = await connectTls(port);
  socket.on("error", () => {});
  socket.write(head.join("\r\n") + "\r\n\r\n");
  let buffered = new Uint8Array(0);
  const headEnd = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Uint8Array) => {
      const merged = new Uint8Array(buffered.length + chunk.length);
      merged.set(buffered);
      merged.set(chunk, buffered.length);
      buffered = merged;
      const at = new TextDecoder("latin1").decode(buffered).indexOf("\r\n\r\n");
      if (at < 0) return;
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.pause();
      resolve(at);
    };
    const onEnd = () => reject(new Error("The connection closed before an answer"));
    socket.on("data", onData);
    socket.on("end", onEnd);
  });
  const text = new TextDecoder("latin1").decode(buffered.subarray(0, headEnd));
  const [statusLine, ...lines] = text.split("\r\n");
  const headers = lines.map((line): [string, string] => {
    const colon = line.indexOf(":");
    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
  });
  const status = Number(statusLine.split(" ")[1]);
  const rest = buffered.subarray(headEnd + 4);
  const upgradedTo = headers.find(([n]) => n === "upgrade")?.[1] ?? "";
  if (status === 101 && !/spdy/i.test(upgradedTo)) {
    return { status, headers, body: "", rest, socket };
  }
  if (status === 101) {
    const session = new SpdySession(duplexFromNodeSocket(socket, { head: rest }), {
      role: "client",
    });
    return { status, headers, body: "", session, rest, socket };
  }
  const chunks = [rest];
  socket.resume();
  await new Promise<void>((resolve) => {
    socket.on("data", (c: Uint8Array) => chunks.push(new Uint8Array(c)));
    socket.on("close", () => resolve());
  });
  const body = new TextDecoder().decode(concat(chunks));
  return { status, headers, body, rest, socket };
}

/** A SPDY upgrade request head for `path`. */
export function spdyRequest(path: string, protocols: string[], method = "POST"): string[] {
  return [
    `${method} ${path} HTTP/1.1`,
    "Host: 127.0.0.1",
    "Connection: Upgrade",
    "Upgrade: SPDY/3.1",
    ...protocols.map((p) => `X-Stream-Protocol-Version: ${p}`),
  ];
}

/** Opens a WebSocket to the server with `protocols`; rejects on a refused handshake. */
export function openWebSocket(port: number, path: string, protocols: string[]): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`wss://127.0.0.1:${port}${path}`, protocols, {
      rejectUnauthorized: false,
      perMessageDeflate: false,
    });
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_req: unknown, res: { statusCode?: number }) => {
      reject(new Error(`HTTP ${res.statusCode}`));
      ws.terminate();
    });
    ws.once("error", reject);
  });
}

/** Concatenates byte chunks. */
export function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Reads a stream to its end. */
export async function readAll(readable: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of readable) chunks.push(chunk);
  return concat(chunks);
}
