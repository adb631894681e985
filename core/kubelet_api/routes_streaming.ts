/**
 * `/exec`, `/attach` and `/portForward`: the kubelet's streaming routes. This file checks what
 * the kubelet checks before a session (the provider can do it, the pod and container exist,
 * the uid matches, the request is an upgrade) and hands the raw connection to the configured
 * {@link StreamingHandler}, which speaks SPDY or WebSocket. Without a handler: 501.
 * @module
 */
import type { Context, Hono } from "hono";
import type { IncomingMessage } from "node:http";
import { notSupportedText, type Provider } from "../../provider/mod.ts";
import { findPod, requireContainer } from "./pod_lookup.ts";
import { HttpError } from "./status.ts";
import type {
  KubeletApiDeps,
  KubeletEnv,
  StreamingContext,
  StreamingHandler,
  StreamingParams,
} from "./types.ts";

type Kind = keyof StreamingHandler;

const CAPABILITY: Record<Kind, keyof Provider> = {
  exec: "runInContainer",
  attach: "attachToContainer",
  portForward: "portForward",
};

/** Adds the streaming routes to `app`. */
export function registerStreamingRoutes(app: Hono<KubeletEnv>, deps: KubeletApiDeps): void {
  const methods = ["GET", "POST"];
  for (const kind of ["exec", "attach"] as const) {
    app.on(methods, [
      `/${kind}/:namespace/:pod/:container`,
      `/${kind}/:namespace/:pod/:uid/:container`,
    ], (c) => serve(c, kind, deps));
  }
  app.on(
    methods,
    ["/portForward/:namespace/:pod", "/portForward/:namespace/:pod/:uid"],
    (c) => serve(c, "portForward", deps),
  );
}

async function serve(c: Context<KubeletEnv>, kind: Kind, deps: KubeletApiDeps): Promise<Response> {
  const handler = deps.streaming;
  if (!handler) {
    throw new HttpError(501, `${kind} is not available: no streaming handler is configured`);
  }
  if (typeof deps.provider[CAPABILITY[kind]] !== "function") {
    throw new HttpError(501, notSupportedText(kind));
  }
  const params = c.req.param() as Partial<Record<string, string>>;
  const streamingParams: StreamingParams = {
    namespace: params.namespace!,
    pod: params.pod!,
    ...(params.container !== undefined ? { container: params.container } : {}),
    ...(params.uid !== undefined ? { uid: params.uid } : {}),
  };
  const pod = await findPod(
    deps.podCache,
    streamingParams.namespace,
    streamingParams.pod,
    streamingParams.uid,
  );
  if (streamingParams.container !== undefined) requireContainer(pod, streamingParams.container);
  const slot = c.env?.upgrade;
  if (!slot) throw new HttpError(400, "Upgrade request required");
  const context: StreamingContext = {
    socket: slot.socket,
    head: slot.head,
    request: c.req.raw,
    incoming: c.env.incoming as IncomingMessage,
    params: streamingParams,
    query: new URL(c.req.url).searchParams,
    user: c.get("user"),
    pod,
    provider: deps.provider,
    signal: deps.signal ?? new AbortController().signal,
  };
  const answer = await handler[kind](context);
  if (answer) return answer;
  slot.taken = true;
  // Never written: the listener sees `taken` and leaves the socket to the handler.
  return new Response(null, { status: 200 });
}
