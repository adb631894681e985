/**
 * The plain-HTTP listener of `--metrics-addr`: vkubelet's own `/metrics` (the registry the
 * controllers update, Prometheus text) and `/healthz` (200 `ok` while the provider answers its
 * ping, 503 with the reason while it does not), and nothing else. It has no authentication, so
 * it serves nothing secret: counters by phase, verb, route and code, never a pod's name or a
 * credential. Like kube-proxy's `--metrics-bind-address` it listens wherever it is told; the
 * help text says to keep it on loopback unless a scraper elsewhere needs it.
 *
 * Besides the listener, {@link observePodController} fills the series that are read from the
 * pod controller (pods by phase, queue depth, `kubelet_running_pods` and
 * `kubelet_running_containers`) at every render, on whichever listener renders.
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { HostPort } from "./config/schema.ts";
import type { Logger } from "../base/log.ts";
import { PROMETHEUS_TEXT, type VkubeletMetrics } from "../core/metrics.ts";
import type { HealthSource } from "../core/node/health_monitor.ts";

/** What the metrics listener serves from. */
export interface MetricsHandlerDeps {
  metrics: VkubeletMetrics;
  /** The node side's view of the provider (its ping). */
  health: HealthSource;
  /** With `--leader-elect`: this replica's role, named in `/healthz` (`ok: leader`). */
  role?: () => "leader" | "standby";
}

/** One answer of the listener. */
export interface MetricsAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Answers one request: `/metrics`, `/healthz`, 404 for any other path. Plain data rather than a
 * `Response`, because `@hono/node-server` (the kubelet API) swaps the global `Response` for its
 * own, which `Deno.serve` refuses; the listener is `node:http`, as the kubelet API's is.
 */
export function metricsHandler(
  deps: MetricsHandlerDeps,
): (method: string, url: string) => Promise<MetricsAnswer> {
  return async (method, url) => {
    const path = new URL(url, "http://metrics").pathname;
    if (path !== "/metrics" && path !== "/healthz") {
      return text(404, "404 page not found: this listener serves only /metrics and /healthz");
    }
    if (method !== "GET" && method !== "HEAD") {
      return text(405, `${method} is not allowed; use GET`, { allow: "GET, HEAD" });
    }
    if (path === "/metrics") {
      return {
        status: 200,
        headers: { "content-type": PROMETHEUS_TEXT, "cache-control": "no-store" },
        body: await deps.metrics.render(),
      };
    }
    const health = deps.health.current();
    const role = deps.role?.();
    if (health.healthy) return text(200, role ? `ok: ${role}` : "ok");
    return text(503, `provider ping failed: ${health.message ?? "no reason given"}`);
  };
}

function text(status: number, body: string, headers: Record<string, string> = {}): MetricsAnswer {
  return {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "cache-control": "no-store",
      ...headers,
    },
    body: `${body}\n`,
  };
}

/** Options for {@link serveMetrics}. */
export interface ServeMetricsOptions extends MetricsHandlerDeps {
  /** Where to listen; port 0 picks a free one. */
  address: HostPort;
  log: Logger;
}

/** A started listener: where it listens, and a promise that settles once it has closed. */
export interface MetricsListener {
  addr: { hostname: string; port: number };
  done: Promise<void>;
}

/** Thrown when the listener cannot bind its address. */
export class MetricsListenError extends Error {
  override name = "MetricsListenError";
}

/** Listens (rejecting if the address cannot be bound); closes when `signal` aborts. */
export async function serveMetrics(
  options: ServeMetricsOptions,
  signal: AbortSignal,
): Promise<MetricsListener> {
  const { hostname, port } = options.address;
  const handle = metricsHandler(options);
  const server = createServer(async (request, response) => {
    const answer = await handle(request.method ?? "GET", request.url ?? "/").catch((err) =>
      text(500, `cannot render metrics: ${err instanceof Error ? err.message : err}`)
    );
    response.writeHead(answer.status, answer.headers);
    response.end(request.method === "HEAD" ? undefined : answer.body);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, hostname, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new MetricsListenError(
      `--metrics-addr ${hostname}:${port}: cannot listen (${reason}); pick a free port or another address`,
      { cause: err },
    );
  }
  const bound = server.address() as AddressInfo;
  const done = new Promise<void>((resolve) => server.once("close", () => resolve()));
  const close = () => {
    server.close();
    server.closeAllConnections();
  };
  if (signal.aborted) close();
  else signal.addEventListener("abort", close, { once: true });
  server.on("error", (err) => options.log.error("metrics listener failed: {err}", { err }));
  options.log.info("serving /metrics and /healthz over plain HTTP on {addr}", {
    addr: `${bound.address}:${bound.port}`,
  });
  return { addr: { hostname: bound.address, port: bound.port }, done };
}

/** What {@link observePodController} reads, at every render. */
export interface PodControllerView {
  /** This node's pods as the API has them. */
  pods(): Pod[];
  /** Keys waiting in the sync and status queues. */
  readonly queueLengths: { sync: number; status: number };
}

const PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];

/**
 * Sets `vkubelet_pods` by phase and `vkubelet_workqueue_depth` from the pod controller until the
 * returned function is called (a `--leader-elect` term ended), which also clears them.
 */
export function observePodController(
  metrics: VkubeletMetrics,
  pods: PodControllerView,
): () => void {
  const stop = metrics.onCollect(() => {
    const counts = new Map(PHASES.map((phase) => [phase, 0]));
    const containers = new Map(CONTAINER_STATES.map((state) => [state, 0]));
    for (const pod of pods.pods()) {
      const phase = pod.status?.phase ?? "Pending";
      counts.set(phase, (counts.get(phase) ?? 0) + 1);
      countContainers(pod, containers);
    }
    metrics.podsByPhase.reset();
    for (const [phase, count] of counts) metrics.podsByPhase.set({ phase }, count);
    metrics.standard.runningPods.set(counts.get("Running") ?? 0);
    for (const [state, count] of containers) {
      metrics.standard.runningContainers.set({ container_state: state }, count);
    }
    const { sync, status } = pods.queueLengths;
    metrics.workQueueDepth.set({ name: "pods" }, sync);
    metrics.workQueueDepth.set({ name: "pod-status" }, status);
  });
  return () => {
    stop();
    metrics.podsByPhase.reset();
    metrics.workQueueDepth.reset();
    metrics.standard.runningPods.reset();
    metrics.standard.runningContainers.reset();
  };
}

/**
 * `kubelet_running_containers`' states: the kubelet's container runtime states (kubernetes/
 * kubernetes pkg/kubelet/container/runtime.go), counted from the pods' container statuses as
 * pkg/kubelet/pleg/generic.go counts the runtime's containers. A waiting container with no
 * earlier run has no container yet and is not counted; one waiting to restart has exited.
 */
const CONTAINER_STATES = ["created", "running", "exited", "unknown"];

function countContainers(pod: Pod, counts: Map<string, number>): void {
  const status = pod.status;
  const all = [
    ...status?.initContainerStatuses ?? [],
    ...status?.containerStatuses ?? [],
    ...status?.ephemeralContainerStatuses ?? [],
  ];
  for (const container of all) {
    const state = container.state?.running
      ? "running"
      : container.state?.terminated || container.lastState?.terminated
      ? "exited"
      : undefined;
    if (state) counts.set(state, counts.get(state)! + 1);
  }
}
