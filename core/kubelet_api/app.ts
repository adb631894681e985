/**
 * `createKubeletApp`: the kubelet API as a Hono app. Every request is authenticated and
 * authorized first (`./authn.ts`, `./authz.ts`), then routed; errors are mapped to HTTP in one
 * place. The same app serves plain requests and upgrade requests (see `./upgrade.ts`); tests
 * call `app.request()` in-process.
 * @module
 */
import { type Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { getPath } from "hono/utils/url";
import { isInvalidInput, isNotFound, isNotSupported, isTransient } from "../../provider/mod.ts";
import { Authenticator } from "./authn.ts";
import { Authorizer } from "./authz.ts";
import { muxRedirect, redirectResponse, routePath } from "./mux_paths.ts";
import { registerLogRoutes } from "./routes_logs.ts";
import { registerNodeRoutes } from "./routes_node.ts";
import { registerStreamingRoutes } from "./routes_streaming.ts";
import { isHttpError, statusResponse } from "./status.ts";
import type { KubeletApiDeps, KubeletEnv, PeerSocket, TunnelEndpoint } from "./types.ts";

/** The kubelet API app; see the module doc. */
export function createKubeletApp(deps: KubeletApiDeps): Hono<KubeletEnv> {
  // Routes see the path as the kubelet's go-restful services do (`./mux_paths.ts`).
  const app = new Hono<KubeletEnv>({ getPath: (request) => routePath(getPath(request)) });
  const authenticator = new Authenticator({
    tokenReviewer: deps.auth.tokenReviewer,
    anonymous: deps.auth.anonymous,
    clock: deps.clock,
    tokenCacheTtlMs: deps.auth.tokenCacheTtlMs,
    tokenFailureCacheTtlMs: deps.auth.tokenFailureCacheTtlMs,
  });
  const authorizer = new Authorizer({
    reviewer: deps.auth.accessReviewer,
    nodeName: deps.nodeName,
    clock: deps.clock,
    allowCacheTtlMs: deps.auth.allowCacheTtlMs,
    denyCacheTtlMs: deps.auth.denyCacheTtlMs,
  });
  const log = deps.log;

  // The Go mux redirects before any handler or filter runs: no authentication.
  app.use("*", async (c, next) => {
    const target = muxRedirect(getPath(c.req.raw));
    if (target === undefined) return await next();
    c.res = redirectResponse(c.req.raw, target);
  });

  // The tunnel's agents carry their own credential: it never reaches a TokenReview.
  const tunnel = deps.tunnel;
  if (tunnel) app.get("/tunnel", (c) => acceptTunnel(c, tunnel, deps));

  app.use("*", async (c, next) => {
    const done = deps.metrics ? countRequest(deps, c.req.method) : undefined;
    const span = deps.tracer?.start(`${c.req.method} ${routeLabel(c.req.path)}`, {
      kind: "server",
      attributes: { "http.request.method": c.req.method, "url.path": c.req.path },
    });
    try {
      const socket = (c.env?.incoming as { socket?: PeerSocket } | undefined)?.socket;
      const signal = c.req.raw.signal;
      const who = await authenticator.authenticate(c.req.raw, socket, { signal });
      if (!who.user) {
        log.debug("unauthenticated request to {path}: {reason}", {
          path: c.req.path,
          reason: who.reason,
        });
        c.res = statusResponse(401, "Unauthorized");
        return;
      }
      const decision = await authorizer.authorize(who.user, c.req.method, c.req.path, { signal });
      if (!decision.allowed) {
        const message =
          `Forbidden (user=${who.user.username}, verb=${decision.verb}, resource=nodes, subresource(s)=[${
            decision.subresources.join(" ")
          }])`;
        log.debug("{message}: {reason}", { message, reason: decision.reason ?? "" });
        c.res = statusResponse(403, message);
        return;
      }
      c.set("user", who.user);
      if (socket && who.user.groups.includes("system:authenticated")) deps.onAuthorized?.(socket);
      await next();
    } finally {
      done?.(routeLabel(c.req.path), c.res.status);
      if (span) {
        span.setAttribute("http.response.status_code", c.res.status);
        if (c.res.status >= 500) span.fail(new Error(`answered ${c.res.status}`));
        span.end();
      }
    }
  });

  registerNodeRoutes(app, deps);
  registerLogRoutes(app, deps);
  registerStreamingRoutes(app, deps);

  app.notFound((c) =>
    statusResponse(404, `the server could not find the requested resource (${c.req.path})`)
  );
  app.onError((err) => errorResponse(err, deps));
  return app;
}

async function acceptTunnel(
  c: Context<KubeletEnv>,
  tunnel: TunnelEndpoint,
  deps: KubeletApiDeps,
): Promise<Response> {
  const slot = c.env?.upgrade;
  if (!slot) return statusResponse(400, "The tunnel needs an HTTP/1.1 upgrade request");
  const answer = await tunnel.accept({ request: c.req.raw, socket: slot.socket, head: slot.head });
  if (answer) return answer;
  slot.taken = true;
  const socket = (c.env?.incoming as { socket?: PeerSocket } | undefined)?.socket;
  if (socket) deps.onAuthorized?.(socket);
  return new Response(null, { status: 101 });
}

/** Maps domain errors to HTTP answers (the one place that does). */
export function errorResponse(err: unknown, deps: Pick<KubeletApiDeps, "log">): Response {
  if (isHttpError(err)) return statusResponse(err.status, err.message, err.headers);
  if (err instanceof HTTPException) return statusResponse(err.status, err.message || "error");
  const message = err instanceof Error ? err.message : String(err);
  if (isNotFound(err)) return statusResponse(404, message);
  if (isNotSupported(err)) return statusResponse(501, message);
  if (isInvalidInput(err)) return statusResponse(400, message);
  if (isTransient(err)) return statusResponse(503, message);
  deps.log.error("kubelet API request failed: {err}", { err });
  return statusResponse(500, `Internal error: ${message}`);
}

const ROUTES = new Set([
  "containerLogs",
  "exec",
  "attach",
  "portForward",
  "pods",
  "runningpods",
  "healthz",
  "livez",
  "readyz",
  "stats",
  "metrics",
]);

/** A bounded route label for a path (paths themselves would let callers add series). */
function routeLabel(path: string): string {
  const [first, second] = path.split("/").slice(1);
  if (!ROUTES.has(first)) return "other";
  if (first === "metrics" && second === "resource") return "/metrics/resource";
  return `/${first}`;
}

function countRequest(deps: KubeletApiDeps, method: string) {
  return (route: string, code: number) => {
    deps.metrics!.kubeletApiRequests.inc({ route, method, code: String(code) });
  };
}
