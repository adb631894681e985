/**
 * vkubelet's own metrics on a `prom-client` registry, rendered in the Prometheus text format
 * (0.0.4) on the kubelet API's `/metrics` and on `--metrics-addr`. Controllers get a
 * {@link VkubeletMetrics} in their deps and update the series they own through prom-client's
 * API; nothing here does I/O besides what prom-client's default process metrics read at render
 * (`/proc/self/status`, `/proc/self/fd`, `/proc/self/limits` on Linux).
 *
 * ```ts
 * const metrics = new VkubeletMetrics();
 * metrics.apiRequests.inc({ verb: "PATCH", code: "200" });
 * const stop = metrics.syncLatency.startTimer();
 * stop({ result: "success" }); // observes the seconds since startTimer
 * const text = await metrics.render();
 * ```
 * @module
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { StandardMetrics } from "./standard_metrics.ts";

/** The content type of {@link VkubeletMetrics.render}'s output. */
export const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

/**
 * The series vkubelet's controllers update, on one registry, with prom-client's default process
 * and runtime metrics (`process_*`, `nodejs_*`: CPU, memory, open file descriptors, event-loop
 * lag, heap spaces).
 */
export class VkubeletMetrics {
  readonly registry: Registry;
  /** Items waiting in a work queue, by queue name (`pods`, ...). */
  readonly workQueueDepth: Gauge<"name">;
  /** Time to sync one pod with the provider, by result (`success`, `error`). */
  readonly syncLatency: Histogram<"result">;
  /** Requests vkubelet made to the apiserver, by verb and HTTP code. */
  readonly apiRequests: Counter<"verb" | "code">;
  /** Pods on this node by phase; set whole by the pod controller. */
  readonly podsByPhase: Gauge<"phase">;
  /** Time to renew the node lease, by result. */
  readonly leaseRenewalLatency: Histogram<"result">;
  /** Requests served by the kubelet API, by route, method and code. */
  readonly kubeletApiRequests: Counter<"route" | "method" | "code">;
  /** 1 while this replica leads (always, without `--leader-elect`), 0 while it stands by. */
  readonly leader: Gauge;
  /** The client-go and kubelet families (`rest_client_*`, `workqueue_*`, `kubelet_*`). */
  readonly standard: StandardMetrics;
  readonly #collectors = new Set<() => void>();

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    this.workQueueDepth = new Gauge({
      name: "vkubelet_workqueue_depth",
      help: "Items waiting in a work queue.",
      labelNames: ["name"],
      registers,
    });
    this.syncLatency = new Histogram({
      name: "vkubelet_pod_sync_duration_seconds",
      help: "Time to sync one pod with the provider.",
      labelNames: ["result"],
      registers,
    });
    this.apiRequests = new Counter({
      name: "vkubelet_kube_api_requests_total",
      help: "Requests to the Kubernetes API server, by verb and HTTP status code.",
      labelNames: ["verb", "code"],
      registers,
    });
    this.podsByPhase = new Gauge({
      name: "vkubelet_pods",
      help: "Pods bound to this node, by phase.",
      labelNames: ["phase"],
      registers,
    });
    this.leaseRenewalLatency = new Histogram({
      name: "vkubelet_lease_renewal_duration_seconds",
      help: "Time to renew the node lease.",
      labelNames: ["result"],
      registers,
    });
    this.kubeletApiRequests = new Counter({
      name: "vkubelet_kubelet_api_requests_total",
      help: "Requests served by the kubelet API, by route, method and HTTP status code.",
      labelNames: ["route", "method", "code"],
      registers,
    });
    this.leader = new Gauge({
      name: "vkubelet_leader",
      help: "1 while this replica is the node's leader and writes, 0 while it is a standby.",
      registers,
    });
    this.standard = new StandardMetrics(registry);
    new Gauge({
      name: "vkubelet_heap_used_bytes",
      help: "JavaScript heap in use, in bytes.",
      registers,
      collect() {
        this.set(Deno.memoryUsage().heapUsed);
      },
    });
    // prom-client samples the event loop's delay on a timer, every 10 ms by default: an idle
    // vkubelet then woke 108 times a second and spent 0.45 CPU s a minute doing nothing (the
    // bench's steady state went from 0.06 to 0.39 CPU s/min at 100 pods). Once a second keeps the
    // nodejs_eventloop_lag_* series and costs 2 wake-ups a second (measured: a bare Deno process
    // with the monitor at 10 ms, 1,080 voluntary context switches in 10 s; at 1,000 ms, 24).
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 });
  }

  /**
   * Runs `collect` before every render (for values read on demand, like pods by phase); returns
   * a function that stops it.
   */
  onCollect(collect: () => void): () => void {
    const entry = () => collect();
    this.#collectors.add(entry);
    return () => this.#collectors.delete(entry);
  }

  /** Every metric in the Prometheus text format. */
  async render(): Promise<string> {
    for (const collect of this.#collectors) collect();
    return await this.registry.metrics();
  }
}
