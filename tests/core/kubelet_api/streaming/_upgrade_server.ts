/**
 * A minimal plain-TCP HTTP/1.1 upgrade server for interop tests: parses one request head,
 * negotiates the SPDY upgrade with our helper, writes the 101 (or the refusal) and hands the
 * socket to a SPDY session. The real server (TLS, auth, routing) lives elsewhere.
 * @module
 */
import net from "node:net";
import { duplexFromNodeSocket } from "../../../../spdy/node_socket_duplex.ts";
import {
  negotiateSpdyUpgrade,
  type SpdyUpgradeAnswer,
} from "../../../../core/kubelet_api/streaming/negotiation.ts";
import { SpdySession } from "../../../../spdy/session.ts";

/** What the handler learns about the upgraded request. */
export interface UpgradedRequest {
  url: URL;
  protocol: string;
  session: SpdySession;
}

/** A running test server. */
export interface UpgradeServer {
  port: number;
  /** Every answer given, in order. */
  answers: SpdyUpgradeAnswer[];
  /** Stops listening, waits for the handlers, and closes their sessions. */
  close(): Promise<void>;
}

function parseHead(text: string) {
  const [requestLine, ...lines] = text.split("\r\n");
  const headers = new Map<string, string[]>();
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...headers.get(name) ?? [], line.slice(colon + 1).trim()]);
  }
  return { target: requestLine.split(" ")[1] ?? "/", headers };
}

/** Listens on 127.0.0.1; `protocolsFor(path)` picks the server protocols per route. */
export async function startUpgradeServer(
  protocolsFor: (url: URL) => readonly string[],
  handler: (request: UpgradedRequest) => Promise<void>,
): Promise<UpgradeServer> {
  const answers: SpdyUpgradeAnswer[] = [];
  const tasks = new Set<Promise<void>>();
  const sessions = new Set<SpdySession>();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let buffered = new Uint8Array(0);
    const onHead = (chunk: Uint8Array) => {
      const merged = new Uint8Array(buffered.length + chunk.length);
      merged.set(buffered);
      merged.set(chunk, buffered.length);
      buffered = merged;
      const text = new TextDecoder("latin1").decode(buffered);
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) {
        if (buffered.length > 16384) socket.destroy();
        return;
      }
      socket.off("data", onHead);
      socket.pause();
      const { target, headers } = parseHead(text.slice(0, end));
      const url = new URL(target, "http://127.0.0.1");
      const answer = negotiateSpdyUpgrade({
        connection: headers.get("connection")?.join(","),
        upgrade: headers.get("upgrade")?.join(","),
        streamProtocolVersion: headers.get("x-stream-protocol-version"),
      }, protocolsFor(url));
      answers.push(answer);
      const statusText = answer.status === 101 ? "Switching Protocols" : "Refused";
      const lines = [`HTTP/1.1 ${answer.status} ${statusText}`];
      for (const [name, value] of answer.headers) lines.push(`${name}: ${value}`);
      if (!answer.ok) {
        lines.push(`Content-Length: ${answer.body.length}`, "Connection: close");
        socket.end(lines.join("\r\n") + "\r\n\r\n" + answer.body);
        return;
      }
      socket.write(lines.join("\r\n") + "\r\n\r\n");
      const session = new SpdySession(
        duplexFromNodeSocket(socket, { head: buffered.subarray(end + 4) }),
        { role: "server" },
      );
      sessions.add(session);
      const task = handler({ url, protocol: answer.protocol, session })
        .catch((err) => {
          console.error("test handler failed:", err);
          session.close();
        })
        .then(() => session.closed);
      tasks.add(task);
    };
    socket.on("data", onHead);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    answers,
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      await Promise.all(tasks);
      for (const session of sessions) session.close();
      await Promise.all([...sessions].map((s) => s.closed));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
