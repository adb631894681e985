/**
 * The metric families that dashboards for kubelets and client-go programs already read, beside
 * vkubelet's own `vkubelet_*`: names, help, labels and buckets as upstream defines them, so a
 * kubelet dashboard works on a vkubelet node unchanged.
 *
 * - `rest_client_*`: kubernetes/kubernetes staging/src/k8s.io/component-base/metrics/prometheus/
 *   restclient/metrics.go, fed as client-go's rest/request.go and rest/with_retry.go feed it (every
 *   attempt counted by code, method and host; one latency per request, retries and the client's
 *   rate limiter included; none for watches and streams).
 * - `workqueue_*`: component-base/metrics/prometheus/workqueue/metrics.go, fed as client-go's
 *   util/workqueue/metrics.go feeds it (see {@link QueueMetrics}).
 * - `kubelet_*`: pkg/kubelet/metrics/metrics.go (`running_pods`, `running_containers`,
 *   `pod_start_duration_seconds`, `node_name`).
 * @module
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** `rest_client_request_duration_seconds`' buckets (component-base restclient/metrics.go). */
const REST_CLIENT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

/** The work queue histograms' buckets: `ExponentialBuckets(10e-9, 10, 10)`, 10 ns to 10 s. */
const WORKQUEUE_BUCKETS = Array.from(
  { length: 10 },
  (_, i) => Number((1e-8 * 10 ** i).toPrecision(1)),
);

/** `kubelet_pod_start_duration_seconds`' buckets (pkg/kubelet/metrics/metrics.go). */
const POD_START_BUCKETS = [
  0.5,
  1,
  2,
  3,
  4,
  5,
  6,
  8,
  10,
  20,
  30,
  45,
  60,
  120,
  180,
  240,
  300,
  360,
  480,
  600,
  900,
  1200,
  1800,
  2700,
  3600,
];

/**
 * What a work queue tells its metrics, as client-go's `queueMetrics` is told: a key entering the
 * queue, a worker taking it (after waiting `waitedSeconds`), its processing done, a delayed add.
 */
export interface QueueMetrics {
  /** A key entered the queue. */
  added(): void;
  /** A worker took a key that had waited this long in the queue. */
  taken(waitedSeconds: number): void;
  /** A key's processing took this long. */
  done(workSeconds: number): void;
  /** A key is to come back after a delay (a retry, or a requeue the processing asked for). */
  retried(): void;
  /** Keys left in a queue that stopped: they leave the depth. */
  discarded(count: number): void;
}

/** The client-go and kubelet families; see the module doc. */
export class StandardMetrics {
  /** `rest_client_requests_total{code,method,host}`: every attempt, `<error>` without an answer. */
  readonly restClientRequests: Counter<"code" | "method" | "host">;
  /** `rest_client_request_duration_seconds{verb,host}`: one per request, retries included. */
  readonly restClientDuration: Histogram<"verb" | "host">;
  /** `kubelet_running_pods`: pods the provider runs (phase Running). */
  readonly runningPods: Gauge;
  /** `kubelet_running_containers{container_state}`: containers by state. */
  readonly runningContainers: Gauge<"container_state">;
  /** `kubelet_pod_start_duration_seconds`: from first seeing a pod to writing it Running. */
  readonly podStartDuration: Histogram;
  /** `kubelet_node_name{node}`: 1 for each node this process runs. */
  readonly nodeName: Gauge<"node">;
  readonly #depth: Gauge<"name">;
  readonly #adds: Counter<"name">;
  readonly #queueDuration: Histogram<"name">;
  readonly #workDuration: Histogram<"name">;
  readonly #retries: Counter<"name">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.restClientRequests = new Counter({
      name: "rest_client_requests_total",
      help: "Number of HTTP requests, partitioned by status code, method, and host.",
      labelNames: ["code", "method", "host"],
      registers,
    });
    this.restClientDuration = new Histogram({
      name: "rest_client_request_duration_seconds",
      help: "Request latency in seconds. Broken down by verb, and host.",
      labelNames: ["verb", "host"],
      buckets: REST_CLIENT_BUCKETS,
      registers,
    });
    const named = { labelNames: ["name"] as const, registers };
    this.#depth = new Gauge({
      name: "workqueue_depth",
      help: "Current depth of workqueue",
      ...named,
    });
    this.#adds = new Counter({
      name: "workqueue_adds_total",
      help: "Total number of adds handled by workqueue",
      ...named,
    });
    this.#queueDuration = new Histogram({
      name: "workqueue_queue_duration_seconds",
      help: "How long in seconds an item stays in workqueue before being requested.",
      buckets: WORKQUEUE_BUCKETS,
      ...named,
    });
    this.#workDuration = new Histogram({
      name: "workqueue_work_duration_seconds",
      help: "How long in seconds processing an item from workqueue takes.",
      buckets: WORKQUEUE_BUCKETS,
      ...named,
    });
    this.#retries = new Counter({
      name: "workqueue_retries_total",
      help: "Total number of retries handled by workqueue",
      ...named,
    });
    this.runningPods = new Gauge({
      name: "kubelet_running_pods",
      help: "Number of pods that have a running pod sandbox",
      registers,
    });
    this.runningContainers = new Gauge({
      name: "kubelet_running_containers",
      help: "Number of containers currently running",
      labelNames: ["container_state"],
      registers,
    });
    this.podStartDuration = new Histogram({
      name: "kubelet_pod_start_duration_seconds",
      help:
        "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
      buckets: POD_START_BUCKETS,
      registers,
    });
    this.nodeName = new Gauge({
      name: "kubelet_node_name",
      help: "The node's name. The count is always 1.",
      labelNames: ["node"],
      registers,
    });
  }

  /** The hooks for one work queue, its series labelled `name` (shared by queues of one name). */
  queue(name: string): QueueMetrics {
    const labels = { name };
    const depth = this.#depth.labels(labels);
    const adds = this.#adds.labels(labels);
    const queued = this.#queueDuration.labels(labels);
    const work = this.#workDuration.labels(labels);
    const retries = this.#retries.labels(labels);
    return {
      added: () => {
        adds.inc();
        depth.inc();
      },
      taken: (waited) => {
        depth.dec();
        queued.observe(waited);
      },
      done: (seconds) => work.observe(seconds),
      retried: () => retries.inc(),
      discarded: (count) => {
        if (count > 0) depth.dec(count);
      },
    };
  }
}
