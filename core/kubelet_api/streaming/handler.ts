/**
 * `createStreamingHandler`: the {@link StreamingHandler} behind the kubelet API's `/exec`,
 * `/attach` and `/portForward` routes. It checks what can be refused before upgrading (a
 * provider without the capability: 501; a bad query or an unknown protocol: 400/403), then
 * takes the socket over and speaks SPDY/3.1 (`Upgrade: SPDY/3.1`) or WebSocket
 * (`Upgrade: websocket`: channel.k8s.io … v5.channel.k8s.io, port-forward channels, and the
 * `SPDY/3.1+portforward.k8s.io` tunnel), calling the provider's `runInContainer`,
 * `attachToContainer` or `portForward`. Sessions end on the idle timeout, when the client goes
 * away, or when the server's signal aborts.
 * @module
 */
import { type Clock, realClock } from "../../../base/clock.ts";
import type { Logger } from "../../../base/log.ts";
import { notSupportedText, type Provider } from "../../../provider/mod.ts";
import { StreamProtocol } from "../../../spdy/protocols.ts";
import type { StreamingContext, StreamingHandler } from "../types.ts";
import {
  KUBELET_REMOTE_COMMAND_PROTOCOLS,
  parseRemoteCommandQuery,
  type RemoteCommandQuery,
} from "./negotiation.ts";
import {
  serveSpdyCommand,
  serveSpdyPortForward,
  type SessionSettings,
  type SpdyUpgrade,
  upgradeToSpdy,
} from "./spdy_serve.ts";
import { isSpdyTunnelProtocol, WS_EXEC_PROTOCOLS } from "./ws_channels.ts";
import { parsePortQuery } from "./ws_port_forward.ts";
import {
  chooseWsProtocol,
  isWebSocketRequest,
  serveWsCommand,
  serveWsPortForward,
  upgradeToWebSocket,
  WS_PORT_FORWARD_PROTOCOLS,
} from "./ws_serve.ts";
import { SessionScope } from "./_session_scope.ts";

/** Options for {@link createStreamingHandler}. */
export interface StreamingHandlerOptions {
  log: Logger;
  clock?: Clock;
  /** `--stream-idle-timeout`: close a session with no bytes either way for this long; 30 s. */
  streamIdleTimeoutMs?: number;
  /** `--stream-creation-timeout`: how long a client may take to open its streams; 30 s. */
  streamCreationTimeoutMs?: number;
  /** How long a finished session waits for the client to close; default 10 s. */
  lingerMs?: number;
}

/** The handler, plus what tests and metrics may want to see. */
export interface KubeletStreamingHandler extends StreamingHandler {
  /** Sessions running now. */
  readonly activeSessions: number;
  /** Resolves once every session running now has ended. */
  drained(): Promise<void>;
  /**
   * Sessions started so far by transport and sub-protocol, e.g. `spdy v4.channel.k8s.io`,
   * `websocket v5.channel.k8s.io`, `websocket SPDY/3.1+portforward.k8s.io`.
   */
  readonly sessionCounts: Readonly<Record<string, number>>;
}

type CommandKind = "exec" | "attach";

const CAPABILITY: Record<CommandKind | "portForward", keyof Provider> = {
  exec: "runInContainer",
  attach: "attachToContainer",
  portForward: "portForward",
};

/** Builds the streaming handler; see the module doc. */
export function createStreamingHandler(options: StreamingHandlerOptions): KubeletStreamingHandler {
  const settings: SessionSettings = {
    log: options.log,
    clock: options.clock ?? realClock,
    streamCreationTimeoutMs: options.streamCreationTimeoutMs ?? 30_000,
    lingerMs: options.lingerMs ?? 10_000,
  };
  const idleTimeoutMs = options.streamIdleTimeoutMs ?? 30_000;
  const running = new Set<Promise<void>>();
  const counts: Record<string, number> = {};
  const count = (transport: string, protocol: string) => {
    const key = `${transport} ${protocol}`;
    counts[key] = (counts[key] ?? 0) + 1;
  };

  /** Runs a session in the background; the route returns as soon as the socket is taken. */
  function start(
    ctx: StreamingContext,
    what: string,
    body: (scope: SessionScope) => Promise<void>,
    scope = newScope(ctx),
  ): void {
    const task = body(scope)
      .catch((err) => {
        settings.log.warn("{what} session for {pod} failed: {err}", {
          what,
          pod: `${ctx.params.namespace}/${ctx.params.pod}`,
          err,
        });
        ctx.socket.destroy();
      })
      .finally(() => {
        scope.dispose();
        running.delete(task);
      });
    running.add(task);
  }

  function newScope(ctx: StreamingContext): SessionScope {
    return new SessionScope(settings.clock, idleTimeoutMs, ctx.signal);
  }

  /** Answers the SPDY upgrade (or refuses it) and serves the session in the background. */
  function startSpdy(
    ctx: StreamingContext,
    what: string,
    protocols: readonly string[],
    serve: (upgraded: SpdyUpgrade, scope: SessionScope) => Promise<void>,
  ): Response | undefined {
    const scope = newScope(ctx);
    const upgraded = upgradeToSpdy(ctx, protocols, scope, settings);
    if (upgraded instanceof Response) {
      scope.dispose();
      return upgraded;
    }
    count("spdy", upgraded.protocol);
    start(ctx, what, (s) => serve(upgraded, s), scope);
    return undefined;
  }

  function command(kind: CommandKind, ctx: StreamingContext): Response | undefined {
    const refused = refuseEarly(ctx, kind);
    if (refused) return refused;
    const parsed = parseRemoteCommandQuery(ctx.query);
    if (!parsed.ok) return textResponse(400, parsed.message);
    const query: RemoteCommandQuery = parsed.query;
    if (kind === "exec" && query.command.length === 0) {
      return textResponse(400, 'you must specify a command (query parameter "command")');
    }
    if (isWebSocketRequest(ctx.request)) {
      const protocol = chooseWsProtocol(ctx.request, WS_EXEC_PROTOCOLS);
      if (protocol instanceof Response) return protocol;
      upgradeToWebSocket(ctx, protocol, (ws) => {
        count("websocket", protocol);
        start(
          ctx,
          kind,
          (scope) => serveWsCommand(ctx, kind, query, ws, protocol, scope, settings),
        );
      });
      return undefined;
    }
    return startSpdy(
      ctx,
      kind,
      KUBELET_REMOTE_COMMAND_PROTOCOLS,
      (upgraded, scope) => serveSpdyCommand(ctx, kind, query, upgraded, scope, settings),
    );
  }

  function portForward(ctx: StreamingContext): Response | undefined {
    const refused = refuseEarly(ctx, "portForward");
    if (refused) return refused;
    if (isWebSocketRequest(ctx.request)) {
      const protocol = chooseWsProtocol(ctx.request, WS_PORT_FORWARD_PROTOCOLS);
      if (protocol instanceof Response) return protocol;
      let ports: number[] = [];
      if (!isSpdyTunnelProtocol(protocol)) {
        const parsed = parsePortQuery(ctx.query);
        if (typeof parsed === "string") return textResponse(400, parsed);
        ports = parsed;
      }
      upgradeToWebSocket(ctx, protocol, (ws) => {
        count("websocket", protocol);
        start(
          ctx,
          "portForward",
          (scope) => serveWsPortForward(ctx, ws, protocol, ports, scope, settings),
        );
      });
      return undefined;
    }
    return startSpdy(
      ctx,
      "portForward",
      [StreamProtocol.portForward],
      (upgraded, scope) => serveSpdyPortForward(ctx, upgraded.session, scope, settings),
    );
  }

  return {
    exec: (ctx) => command("exec", ctx),
    attach: (ctx) => command("attach", ctx),
    portForward,
    get activeSessions() {
      return running.size;
    },
    get sessionCounts() {
      return { ...counts };
    },
    async drained() {
      await Promise.all([...running]);
    },
  };
}

/** 501 before upgrading when the provider lacks the capability (the route checks it too). */
function refuseEarly(ctx: StreamingContext, kind: CommandKind | "portForward") {
  if (typeof ctx.provider[CAPABILITY[kind]] === "function") return undefined;
  return textResponse(501, notSupportedText(kind));
}

function textResponse(status: number, message: string): Response {
  return new Response(`${message}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}
