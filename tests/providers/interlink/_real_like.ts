/**
 * The reference plugin made to answer as the real SLURM plugin does (interlink-hq/
 * interlink-slurm-plugin, commit f8451d93e063b7addc606d227a525fe614d91958, pkg/slurm/), by a
 * proxy on 127.0.0.1 in front of it:
 * - `/status` of a pod it has no job for: one entry per container with an empty state and no
 *   JID (Status.go:471-477); entries never carry a JID or init containers' states (Status.go
 *   builds `PodStatus` from `pod.Spec.Containers` only, e.g. 336-374);
 * - `/status` answers from a copy refreshed at most every `statusCacheMs` (10 s in the plugin,
 *   Status.go:133, 480-485): within that time every call gets the copy made for an earlier
 *   call's pods, whatever pods it asks for;
 * - `/status` of no pods is the ping's resource answer, not a pod list (Status.go:107-131);
 * - `/create` of a pod annotated `vkubelet.test/create: empty-body` answers HTTP 200 with an
 *   empty body, as the plugin does when its job script cannot be made (Create.go:218-224).
 * It forwards with `node:http` because the protocol's GET calls carry bodies.
 * @module
 */
import http from "node:http";
import { Buffer } from "node:buffer";
import type { Pod } from "kubernetes-types/core/v1.d.ts";

/** How the proxy behaves. */
export interface RealLikeOptions {
  /** How long a `/status` answer is reused; default 10 s as the SLURM plugin. */
  statusCacheMs?: number;
}

/** A running proxy. */
export interface RealLikeProxy {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** `/create` calls answered with an empty body so far. */
  refusedCreates: number;
  /** Stops listening. */
  close(): Promise<void>;
}

/** Starts the proxy in front of the plugin at `target` (`http://127.0.0.1:<port>`). */
export async function startRealLike(
  target: () => string,
  options: RealLikeOptions = {},
): Promise<RealLikeProxy> {
  const cacheMs = options.statusCacheMs ?? 10_000;
  let cached: unknown[] = [];
  let refreshedAt = -Infinity;
  const proxy: RealLikeProxy = { url: "", refusedCreates: 0, close: () => Promise.resolve() };
  const server = http.createServer(async (req, res) => {
    const body = await readAll(req);
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const to = new URL(target());
    try {
      if (path === "/status") {
        const pods = JSON.parse(body || "[]") as Pod[];
        if (pods.length === 0) {
          const ping = await forward(to, "POST", "/pinglink", "");
          return reply(res, ping.status, ping.text);
        }
        if (performance.now() - refreshedAt >= cacheMs) {
          const answer = await forward(to, "GET", "/status", body);
          if (answer.status !== 200) return reply(res, answer.status, answer.text);
          cached = slurmStatuses(pods, JSON.parse(answer.text || "[]"));
          refreshedAt = performance.now();
        }
        return reply(res, 200, JSON.stringify(cached));
      }
      if (path === "/create") {
        const pod = (JSON.parse(body) as { pod: Pod }).pod;
        if (pod.metadata?.annotations?.["vkubelet.test/create"] === "empty-body") {
          proxy.refusedCreates++;
          return reply(res, 200, "");
        }
      }
      const answer = await forward(to, req.method ?? "GET", req.url ?? "/", body);
      reply(res, answer.status, answer.text);
    } catch {
      // The plugin is down: no answer at all, as from a dead plugin.
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}

interface PluginStatus {
  UID: string;
  containers?: unknown[];
  [field: string]: unknown;
}

/** The reference plugin's answer for `pods` as the SLURM plugin gives it. */
function slurmStatuses(pods: Pod[], answer: PluginStatus[]): unknown[] {
  const byUid = new Map(answer.map((s) => [s.UID, s]));
  return pods.map((pod) => {
    const found = byUid.get(pod.metadata?.uid ?? "");
    const head = {
      name: pod.metadata?.name ?? "",
      UID: pod.metadata?.uid ?? "",
      namespace: pod.metadata?.namespace ?? "",
      JID: "",
      initContainers: null,
    };
    if (found) return { ...head, containers: found.containers ?? [] };
    return {
      ...head,
      containers: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        state: {},
        lastState: {},
        ready: false,
        restartCount: 0,
        image: "",
        imageID: "",
      })),
    };
  });
}

function reply(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(text);
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
  request: string,
): Promise<{ status: number; text: string }> {
  const body = Buffer.from(request);
  return new Promise((resolve, reject) => {
    const out = http.request({
      hostname: to.hostname,
      port: to.port,
      method,
      path,
      headers: { "content-type": "application/json", "content-length": String(body.length) },
    }, async (res) => {
      resolve({ status: res.statusCode ?? 0, text: await readAll(res as AsyncIterable<Buffer>) });
    });
    out.on("error", reject);
    out.end(body);
  });
}
