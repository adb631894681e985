/**
 * The SPDY/3.1 side of the streaming handler: the upgrade answer written onto the raw socket,
 * then exec/attach (`acceptRemoteCommand` + the provider) or port-forward (`servePortForward`
 * + the provider) on a {@link SpdySession}. Also serves the port-forward SPDY session tunnelled
 * inside a WebSocket.
 * @module
 */
import type { Socket } from "node:net";
import type { Clock } from "../../../base/clock.ts";
import type { Logger } from "../../../base/log.ts";
import type { StreamingContext } from "../types.ts";
import type { ByteDuplex } from "../../../spdy/byte_duplex.ts";
import { runCommand } from "./command_session.ts";
import { negotiateSpdyUpgrade, type RemoteCommandQuery } from "./negotiation.ts";
import { duplexFromNodeSocket } from "../../../spdy/node_socket_duplex.ts";
import { servePortForward } from "./port_forward.ts";
import { acceptRemoteCommand } from "./remote_command.ts";
import { SpdySession } from "../../../spdy/session.ts";
import { touchingDuplex } from "./_idle.ts";
import type { SessionScope } from "./_session_scope.ts";

/** Settings shared by every session. */
export interface SessionSettings {
  log: Logger;
  clock: Clock;
  streamCreationTimeoutMs: number;
  lingerMs: number;
}

/** An upgraded SPDY connection and its negotiated sub-protocol. */
export interface SpdyUpgrade {
  session: SpdySession;
  protocol: string;
}

/**
 * Negotiates the SPDY upgrade; on success writes the 101 onto the socket and returns the
 * session, else the kubelet's refusal (400/403) as a Response for the server to write.
 */
export function upgradeToSpdy(
  ctx: StreamingContext,
  protocols: readonly string[],
  scope: SessionScope,
  settings: SessionSettings,
): SpdyUpgrade | Response {
  const headers = ctx.request.headers;
  const answer = negotiateSpdyUpgrade({
    connection: headers.get("connection"),
    upgrade: headers.get("upgrade"),
    streamProtocolVersion: headers.get("x-stream-protocol-version"),
  }, protocols);
  if (!answer.ok) {
    const refusal = new Headers();
    for (const [name, value] of answer.headers) refusal.append(name, value);
    return new Response(answer.body, { status: answer.status, headers: refusal });
  }
  const head = [
    "HTTP/1.1 101 Switching Protocols",
    ...answer.headers.map(([name, value]) => `${name}: ${value}`),
    "",
    "",
  ].join("\r\n");
  ctx.socket.write(head);
  const duplex = duplexFromNodeSocket(ctx.socket as Socket, { head: ctx.head });
  const session = spdyServerSession(duplex, scope, settings);
  return { session, protocol: answer.protocol };
}

/** A server session on `duplex` whose bytes count as activity and that ends with `scope`. */
export function spdyServerSession(
  duplex: ByteDuplex,
  scope: SessionScope,
  settings: SessionSettings,
): SpdySession {
  const session = new SpdySession(touchingDuplex(duplex, scope.touch), {
    role: "server",
    clock: settings.clock,
    log: settings.log,
  });
  session.closed.then(() => scope.abort("the client closed the connection"));
  return session;
}

/** Exec or attach on an upgraded SPDY session; resolves when the session is over. */
export async function serveSpdyCommand(
  ctx: StreamingContext,
  kind: "exec" | "attach",
  query: RemoteCommandQuery,
  upgraded: SpdyUpgrade,
  scope: SessionScope,
  settings: SessionSettings,
): Promise<void> {
  const { session, protocol } = upgraded;
  let streams;
  try {
    streams = await acceptRemoteCommand(session, {
      protocol,
      expectStdin: query.stdin,
      expectStdout: query.stdout,
      expectStderr: query.stderr,
      tty: query.tty,
      timeoutMs: settings.streamCreationTimeoutMs,
      lingerMs: settings.lingerMs,
      signal: scope.signal,
      clock: settings.clock,
    });
  } catch (err) {
    settings.log.debug("{kind} session not set up: {err}", { kind, err });
    session.close();
    await session.closed;
    return;
  }
  await runCommand({ ...streams, closeNow: () => session.close() }, {
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
  await session.closed;
}

/** Port-forward on a SPDY session (upgraded, or tunnelled in a WebSocket). */
export async function serveSpdyPortForward(
  ctx: StreamingContext,
  session: SpdySession,
  scope: SessionScope,
  settings: SessionSettings,
): Promise<void> {
  const podRef = { namespace: ctx.params.namespace, name: ctx.params.pod };
  const uid = ctx.pod.metadata?.uid;
  await servePortForward(session, (pair, { signal }) =>
    ctx.provider.portForward!(podRef, {
      port: pair.port,
      stream: { readable: pair.data.readable, writable: pair.data.writable },
      signal,
    }), {
    timeoutMs: settings.streamCreationTimeoutMs,
    podDescription: `${podRef.name}, uid ${uid ?? "unknown"}`,
    signal: scope.signal,
    clock: settings.clock,
  });
  session.close();
  await session.closed;
}
