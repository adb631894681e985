/**
 * The read-only kubelet routes: `/pods` (this node's pods from the pod cache), `/runningpods/`
 * (from the provider), `/healthz`, `/livez`, `/readyz`, `/stats/summary`, `/metrics/resource`
 * (from the provider, 501 without the capability) and vkubelet's own `/metrics`.
 * @module
 */
import type { Hono } from "hono";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { PROMETHEUS_TEXT } from "../metrics.ts";
import type { ContainerStats, PodStats, StatsSummary } from "../../provider/mod.ts";
import { HttpError } from "./status.ts";
import type { KubeletApiDeps, KubeletEnv } from "./types.ts";

const podList = (items: readonly Pod[]) => ({
  kind: "PodList",
  apiVersion: "v1",
  metadata: {},
  items,
});

/** Adds the read-only routes to `app`. */
export function registerNodeRoutes(app: Hono<KubeletEnv>, deps: KubeletApiDeps): void {
  const { provider } = deps;
  const signal = (c: { req: { raw: Request } }) => c.req.raw.signal;

  app.get("/pods", async (c) => c.json(podList(await deps.podCache())));
  app.get(
    "/runningpods/",
    async (c) => c.json(podList(await provider.listPods({ signal: signal(c) }))),
  );

  // The kubelet's healthz checkers: ping, log, syncloop (pkg/kubelet/server/server.go).
  const healthz = ["/healthz", "/healthz/ping", "/healthz/log", "/healthz/syncloop"];
  for (const path of [...healthz, "/livez", "/livez/*"]) {
    app.get(path, (c) => c.text("ok"));
  }
  app.get("/readyz", async (c) => {
    try {
      await provider.ping?.({ signal: signal(c) });
    } catch (err) {
      throw new HttpError(503, `provider not ready: ${err instanceof Error ? err.message : err}`);
    }
    return c.text("ok");
  });

  app.on(["GET", "POST"], "/stats/summary", async (c) => {
    if (!provider.getStatsSummary) {
      throw new HttpError(501, "stats are not supported by this node's provider");
    }
    const summary = await provider.getStatsSummary({ signal: signal(c) });
    const only = c.req.query("only_cpu_and_memory") === "true" ||
      (c.req.method === "POST" && await onlyCpuAndMemoryBody(c.req.raw));
    return c.json(only ? cpuAndMemoryOnly(summary) : summary);
  });

  app.get("/metrics/resource", async (c) => {
    if (!provider.getMetricsResource) {
      throw new HttpError(501, "resource metrics are not supported by this node's provider");
    }
    const text = await provider.getMetricsResource({ signal: signal(c) });
    return c.body(text, 200, { "content-type": PROMETHEUS_TEXT });
  });

  app.get("/metrics", async (c) => {
    if (!deps.metrics) throw new HttpError(501, "vkubelet metrics are not enabled");
    return c.body(await deps.metrics.render(), 200, { "content-type": PROMETHEUS_TEXT });
  });
}

/** The legacy POST body `{"only_cpu_and_memory": true}` (metrics-server before 0.6). */
async function onlyCpuAndMemoryBody(request: Request): Promise<boolean> {
  try {
    const body = await request.json();
    return body?.only_cpu_and_memory === true;
  } catch {
    return false;
  }
}

/** The summary reduced to CPU and memory (kubelet stats handler `only_cpu_and_memory`). */
export function cpuAndMemoryOnly(summary: StatsSummary): StatsSummary {
  const container = (s: ContainerStats): ContainerStats => ({
    name: s.name,
    startTime: s.startTime,
    cpu: s.cpu,
    memory: s.memory,
  });
  const pod = (p: PodStats): PodStats => ({
    podRef: p.podRef,
    startTime: p.startTime,
    containers: p.containers.map(container),
    cpu: p.cpu,
    memory: p.memory,
  });
  return {
    node: {
      nodeName: summary.node.nodeName,
      startTime: summary.node.startTime,
      systemContainers: summary.node.systemContainers?.map(container),
      cpu: summary.node.cpu,
      memory: summary.node.memory,
    },
    pods: summary.pods.map(pod),
  };
}
