/**
 * The WebSocket side of the streaming handler: sub-protocol choice before the upgrade (so a
 * client offering nothing we speak gets a 400 and kubectl falls back to SPDY), the upgrade by
 * npm `ws`, then exec/attach on channels, port-forward on channels, or the SPDY tunnel.
 * @module
 */
import { Buffer } from "node:buffer";
// @ts-types="@types/ws"
import { type WebSocket, WebSocketServer } from "ws";
import type { StreamingContext } from "../types.ts";
import { runCommand } from "./command_session.ts";
import { type RemoteCommandQuery, splitProtocolHeader } from "./negotiation.ts";
import { serveSpdyPortForward, type SessionSettings, spdyServerSession } from "./spdy_serve.ts";
import { serveWsPortForwardChannels } from "./ws_port_forward.ts";
import { wsCommandChannels } from "./ws_remote_command.ts";
import { duplexFromWebSocket } from "./ws_transport.ts";
import {
  chooseWebSocketProtocol,
  isSpdyTunnelProtocol,
  WS_EXEC_PROTOCOLS,
  wsProtocolInfo,
} from "./ws_channels.ts";
import type { SessionScope } from "./_session_scope.ts";
import { StreamProtocol } from "../../../spdy/protocols.ts";

/** Port-forward sub-protocols: the SPDY tunnel first, then the channel protocols. */
export const WS_PORT_FORWARD_PROTOCOLS: readonly string[] = [
  StreamProtocol.spdyPortForwardTunnel,
  StreamProtocol.v4,
  StreamProtocol.v4Base64,
  StreamProtocol.v1,
  StreamProtocol.v1Base64,
  "",
];

/** Largest message accepted from a client. */
const MAX_PAYLOAD = 16 << 20;

/** True when the request asks for a WebSocket upgrade. */
export function isWebSocketRequest(request: Request): boolean {
  return (request.headers.get("upgrade") ?? "").toLowerCase().includes("websocket");
}

/** The prefix of the sub-protocol that carries a bearer token (see `../authn.ts`). */
const WS_TOKEN_PROTOCOL = "base64url.bearer.authorization.k8s.io.";

/** The sub-protocol to speak, or the 400 answer when the client offers none we speak. */
export function chooseWsProtocol(
  request: Request,
  supported: readonly string[],
): string | Response {
  const offered = splitProtocolHeader(request.headers.get("sec-websocket-protocol"));
  const chosen = chooseWebSocketProtocol(offered, supported);
  if (chosen !== undefined) return chosen;
  // The offer may carry the bearer token as a sub-protocol: never echo it.
  const shown = offered.map((p) => p.startsWith(WS_TOKEN_PROTOCOL) ? `${WS_TOKEN_PROTOCOL}…` : p);
  return new Response(
    `unable to upgrade: unable to negotiate protocol: client supports [${shown.join(" ")}], ` +
      `server accepts [${supported.filter((p) => p).join(" ")}]\n`,
    { status: 400, headers: { "content-type": "text/plain; charset=utf-8" } },
  );
}

/**
 * Completes the WebSocket handshake on the raw socket; `onOpen` gets the socket. The chosen
 * sub-protocol is answered through the `headers` event rather than `handleProtocols`, because
 * npm `ws` refuses a `Sec-WebSocket-Protocol` list holding names that are not RFC 7230 tokens,
 * and the tunnel's `SPDY/3.1+portforward.k8s.io` has a `/` (Go's gorilla/websocket accepts it).
 */
export function upgradeToWebSocket(
  ctx: StreamingContext,
  protocol: string,
  onOpen: (ws: WebSocket) => void,
): void {
  const server = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: MAX_PAYLOAD,
  });
  delete ctx.incoming.headers["sec-websocket-protocol"];
  if (protocol !== "") {
    server.on(
      "headers",
      (headers: string[]) => headers.push(`Sec-WebSocket-Protocol: ${protocol}`),
    );
  }
  server.handleUpgrade(ctx.incoming, ctx.socket, Buffer.from(ctx.head), (ws: WebSocket) => {
    ws.on("error", () => ws.terminate());
    onOpen(ws);
  });
}

/** Exec or attach on an open WebSocket; resolves when the session is over. */
export async function serveWsCommand(
  ctx: StreamingContext,
  kind: "exec" | "attach",
  query: RemoteCommandQuery,
  ws: WebSocket,
  protocol: string,
  scope: SessionScope,
  settings: SessionSettings,
): Promise<void> {
  const info = wsProtocolInfo(protocol);
  if (!info) throw new TypeError(`${protocol} is not an exec protocol`);
  ws.on("close", () => scope.abort("the client closed the connection"));
  const channels = wsCommandChannels(ws, {
    info,
    stdin: query.stdin,
    stdout: query.stdout,
    stderr: query.stderr,
    tty: query.tty,
    touch: scope.touch,
    lingerMs: settings.lingerMs,
    log: settings.log,
  });
  await runCommand(channels, {
    kind,
    provider: ctx.provider,
    container: {
      namespace: ctx.params.namespace,
      pod: ctx.params.pod,
      container: ctx.params.container ?? "",
    },
    command: query.command,
    tty: query.tty,
    signal: scope.signal,
    finishTimeoutMs: settings.lingerMs + 5_000,
    log: settings.log,
  });
}

/** Port-forward on an open WebSocket: the SPDY tunnel or v4 channels. */
export async function serveWsPortForward(
  ctx: StreamingContext,
  ws: WebSocket,
  protocol: string,
  ports: number[],
  scope: SessionScope,
  settings: SessionSettings,
): Promise<void> {
  ws.on("close", () => scope.abort("the client closed the connection"));
  if (isSpdyTunnelProtocol(protocol)) {
    const duplex = duplexFromWebSocket(ws, { touch: scope.touch });
    await serveSpdyPortForward(ctx, spdyServerSession(duplex, scope, settings), scope, settings);
    return;
  }
  const podRef = { namespace: ctx.params.namespace, name: ctx.params.pod };
  await serveWsPortForwardChannels(
    ws,
    (port, stream, { signal }) => ctx.provider.portForward!(podRef, { port, stream, signal }),
    {
      info: wsProtocolInfo(protocol)!,
      ports,
      podDescription: `${podRef.name}, uid ${ctx.pod.metadata?.uid ?? "unknown"}`,
      touch: scope.touch,
      signal: scope.signal,
      log: settings.log,
    },
  );
}

export { WS_EXEC_PROTOCOLS };
