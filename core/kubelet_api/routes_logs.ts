/**
 * `GET /containerLogs/{namespace}/{pod}/{container}`: a container's log from the provider,
 * streamed as it is read (chunked), with every `PodLogOptions` query parameter the kubelet
 * takes. With `follow` the stream lasts until the provider ends it (the container stopped),
 * the client goes away or the server shuts down. HEAD checks the same and opens no stream.
 * @module
 */
import type { Hono } from "hono";
import { parseLogOptions } from "./log_options.ts";
import { findPod, requireContainer } from "./pod_lookup.ts";
import { HttpError } from "./status.ts";
import type { KubeletApiDeps, KubeletEnv } from "./types.ts";

/** Adds the log routes to `app`. */
export function registerLogRoutes(app: Hono<KubeletEnv>, deps: KubeletApiDeps): void {
  app.get("/containerLogs/:namespace/:pod/:container", async (c) => {
    const { namespace, pod: name, container } = c.req.param();
    const options = parseLogOptions(new URL(c.req.url).searchParams);
    const pod = await findPod(deps.podCache, namespace, name);
    requireContainer(pod, container);
    const getLogs = deps.provider.getContainerLogs?.bind(deps.provider);
    if (!getLogs) {
      throw new HttpError(501, "container logs are not supported by this node's provider");
    }
    const headers = { "content-type": "text/plain; charset=utf-8" };
    // Hono answers HEAD through this GET route and drops the body without cancelling it: a
    // follow stream opened here would never end. The pod and container are checked; no stream.
    if (c.req.raw.method === "HEAD") return new Response(null, { status: 200, headers });
    const signals = [c.req.raw.signal, ...(deps.signal ? [deps.signal] : [])];
    const stream = await getLogs({ namespace, pod: name, container }, {
      ...options,
      signal: AbortSignal.any(signals),
    });
    return new Response(stream, { status: 200, headers });
  });
  // The kubelet's answers for paths with a part missing (server.go getContainerLogs).
  app.get("/containerLogs/*", (c) => {
    const parts = c.req.path.split("/").slice(2);
    if (!parts[0]) throw new HttpError(400, "Missing podNamespace.");
    if (!parts[1]) throw new HttpError(400, "Missing podID.");
    if (!parts[2]) throw new HttpError(400, "Missing container name.");
    throw new HttpError(404, `the server could not find the requested resource (${c.req.path})`);
  });
}
