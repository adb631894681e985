/**
 * vkubelet's own metrics: a small registry of counters, gauges and histograms with labels,
 * rendered in the Prometheus text format (0.0.4) on the kubelet API's `/metrics`. Controllers
 * get a {@link VkubeletMetrics} in their deps and update the series they own; nothing here
 * does I/O.
 *
 * ```ts
 * const metrics = new VkubeletMetrics();
 * metrics.apiRequests.inc({ verb: "PATCH", code: "200" });
 * const stop = metrics.syncLatency.startTimer();
 * stop(); // observes the seconds since startTimer
 * const text = metrics.registry.render();
 * ```
 * @module
 */
import process from "node:process";

/** Label names to values; every series of a metric has the same label names. */
export type Labels = Readonly<Record<string, string>>;

/** What every metric shares. */
export interface MetricOptions {
  /** `snake_case`, with a `_total` suffix for counters and a unit suffix where there is one. */
  name: string;
  help: string;
  /** The label names every update must give (in this order in the output). */
  labelNames?: readonly string[];
}

/** Options for a histogram. */
export interface HistogramOptions extends MetricOptions {
  /** Upper bounds, ascending; `+Inf` is added. */
  buckets?: readonly number[];
}

type Kind = "counter" | "gauge" | "histogram";

/** The default histogram buckets (Prometheus client defaults), in seconds. */
export const DEFAULT_BUCKETS: readonly number[] = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

abstract class Metric<V> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  abstract readonly kind: Kind;
  protected readonly series = new Map<string, { labels: Labels; value: V }>();

  constructor(options: MetricOptions) {
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(options.name)) {
      throw new TypeError(`metric name ${JSON.stringify(options.name)} is not a Prometheus name`);
    }
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames ?? [];
  }

  protected entry(labels: Labels, initial: () => V): { labels: Labels; value: V } {
    const key = this.labelNames.map((n) => {
      if (labels[n] === undefined) throw new TypeError(`metric ${this.name} needs label ${n}`);
      return labels[n];
    }).join("\u0000");
    let found = this.series.get(key);
    if (!found) {
      found = { labels: { ...labels }, value: initial() };
      this.series.set(key, found);
    }
    return found;
  }

  /** Forgets every series (e.g. before a gauge is recomputed from scratch). */
  reset(): void {
    this.series.clear();
  }

  /** The sample lines of this metric, without HELP/TYPE. */
  abstract samples(): string[];

  protected labelText(labels: Labels, extra: Record<string, string> = {}): string {
    const pairs = [...this.labelNames.map((n) => [n, labels[n]]), ...Object.entries(extra)];
    if (pairs.length === 0) return "";
    return `{${pairs.map(([n, v]) => `${n}="${escapeLabel(v)}"`).join(",")}}`;
  }
}

/** A value that only goes up (requests, errors). */
export class Counter extends Metric<number> {
  readonly kind = "counter";
  /** Adds `by` (default 1, never negative). */
  inc(labels: Labels = {}, by = 1): void {
    if (by < 0) throw new RangeError(`counter ${this.name} cannot decrease`);
    this.entry(labels, () => 0).value += by;
  }
  /** Sets the total read from elsewhere (e.g. the process's CPU time); must not go down. */
  setTotal(value: number, labels: Labels = {}): void {
    const entry = this.entry(labels, () => 0);
    entry.value = Math.max(entry.value, value);
  }
  /** The current value, 0 for a series never incremented. */
  get(labels: Labels = {}): number {
    return this.entry(labels, () => 0).value;
  }
  samples(): string[] {
    return [...this.series.values()].map((s) =>
      `${this.name}${this.labelText(s.labels)} ${formatNumber(s.value)}`
    );
  }
}

/** A value that goes up and down (queue depth, pods by phase). */
export class Gauge extends Metric<number> {
  readonly kind = "gauge";
  set(value: number, labels: Labels = {}): void {
    this.entry(labels, () => 0).value = value;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value += by;
  }
  dec(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value -= by;
  }
  get(labels: Labels = {}): number {
    return this.entry(labels, () => 0).value;
  }
  samples(): string[] {
    return [...this.series.values()].map((s) =>
      `${this.name}${this.labelText(s.labels)} ${formatNumber(s.value)}`
    );
  }
}

interface HistogramValue {
  counts: number[];
  sum: number;
  count: number;
}

/** A distribution of observations (latencies, in seconds) in cumulative buckets. */
export class Histogram extends Metric<HistogramValue> {
  readonly kind = "histogram";
  readonly buckets: readonly number[];

  constructor(options: HistogramOptions) {
    super(options);
    this.buckets = [...(options.buckets ?? DEFAULT_BUCKETS)].sort((a, b) => a - b);
  }

  observe(value: number, labels: Labels = {}): void {
    const entry = this.entry(labels, () => ({
      counts: this.buckets.map(() => 0),
      sum: 0,
      count: 0,
    })).value;
    this.buckets.forEach((bound, i) => {
      if (value <= bound) entry.counts[i]++;
    });
    entry.sum += value;
    entry.count++;
  }

  /** Starts timing with `performance.now()`; the returned function observes the seconds. */
  startTimer(labels: Labels = {}): () => number {
    const start = performance.now();
    return () => {
      const seconds = (performance.now() - start) / 1000;
      this.observe(seconds, labels);
      return seconds;
    };
  }

  /** Number of observations of one series. */
  count(labels: Labels = {}): number {
    return this.entry(labels, () => ({ counts: [], sum: 0, count: 0 })).value.count;
  }

  samples(): string[] {
    const lines: string[] = [];
    for (const { labels, value } of this.series.values()) {
      this.buckets.forEach((bound, i) => {
        const le = this.labelText(labels, { le: formatNumber(bound) });
        lines.push(`${this.name}_bucket${le} ${value.counts[i]}`);
      });
      lines.push(`${this.name}_bucket${this.labelText(labels, { le: "+Inf" })} ${value.count}`);
      lines.push(`${this.name}_sum${this.labelText(labels)} ${formatNumber(value.sum)}`);
      lines.push(`${this.name}_count${this.labelText(labels)} ${value.count}`);
    }
    return lines;
  }
}

type AnyMetric = Counter | Gauge | Histogram;

/** Holds metrics by name and renders them all; collectors refresh values just before. */
export class MetricsRegistry {
  readonly #metrics = new Map<string, AnyMetric>();
  readonly #collectors: Array<() => void> = [];

  counter(options: MetricOptions): Counter {
    return this.#add(new Counter(options));
  }

  gauge(options: MetricOptions): Gauge {
    return this.#add(new Gauge(options));
  }

  histogram(options: HistogramOptions): Histogram {
    return this.#add(new Histogram(options));
  }

  /** Runs `collect` before every render (for values read on demand, like process memory). */
  onCollect(collect: () => void): void {
    this.#collectors.push(collect);
  }

  /** Every metric in the Prometheus text format, sorted by name. */
  render(): string {
    for (const collect of this.#collectors) collect();
    const out: string[] = [];
    for (const name of [...this.#metrics.keys()].sort()) {
      const metric = this.#metrics.get(name)!;
      out.push(`# HELP ${name} ${metric.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`);
      out.push(`# TYPE ${name} ${metric.kind}`);
      out.push(...metric.samples());
    }
    return out.join("\n") + "\n";
  }

  #add<M extends AnyMetric>(metric: M): M {
    if (this.#metrics.has(metric.name)) {
      throw new TypeError(`metric ${metric.name} is registered twice`);
    }
    this.#metrics.set(metric.name, metric);
    return metric;
  }
}

/** The content type of {@link MetricsRegistry.render}'s output. */
export const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

/** The series vkubelet's controllers update, on one registry. */
export class VkubeletMetrics {
  readonly registry: MetricsRegistry;
  /** Items waiting in a work queue, by queue name (`pods`, ...). */
  readonly workQueueDepth: Gauge;
  /** Time to sync one pod with the provider, by result (`success`, `error`). */
  readonly syncLatency: Histogram;
  /** Requests vkubelet made to the apiserver, by verb and HTTP code. */
  readonly apiRequests: Counter;
  /** Pods on this node by phase; set whole by the pod controller. */
  readonly podsByPhase: Gauge;
  /** Time to renew the node lease, by result. */
  readonly leaseRenewalLatency: Histogram;
  /** Requests served by the kubelet API, by route, method and code. */
  readonly kubeletApiRequests: Counter;
  /** 1 while this replica leads (always, without `--leader-elect`), 0 while it stands by. */
  readonly leader: Gauge;

  constructor(registry: MetricsRegistry = new MetricsRegistry()) {
    this.registry = registry;
    this.workQueueDepth = registry.gauge({
      name: "vkubelet_workqueue_depth",
      help: "Items waiting in a work queue.",
      labelNames: ["name"],
    });
    this.syncLatency = registry.histogram({
      name: "vkubelet_pod_sync_duration_seconds",
      help: "Time to sync one pod with the provider.",
      labelNames: ["result"],
    });
    this.apiRequests = registry.counter({
      name: "vkubelet_kube_api_requests_total",
      help: "Requests to the Kubernetes API server, by verb and HTTP status code.",
      labelNames: ["verb", "code"],
    });
    this.podsByPhase = registry.gauge({
      name: "vkubelet_pods",
      help: "Pods bound to this node, by phase.",
      labelNames: ["phase"],
    });
    this.leaseRenewalLatency = registry.histogram({
      name: "vkubelet_lease_renewal_duration_seconds",
      help: "Time to renew the node lease.",
      labelNames: ["result"],
    });
    this.kubeletApiRequests = registry.counter({
      name: "vkubelet_kubelet_api_requests_total",
      help: "Requests served by the kubelet API, by route, method and HTTP status code.",
      labelNames: ["route", "method", "code"],
    });
    this.leader = registry.gauge({
      name: "vkubelet_leader",
      help: "1 while this replica is the node's leader and writes, 0 while it is a standby.",
    });
    addProcessMetrics(registry);
  }
}

/** Process memory and CPU, read at each render. */
function addProcessMetrics(registry: MetricsRegistry): void {
  const rss = registry.gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
  });
  const heap = registry.gauge({
    name: "vkubelet_heap_used_bytes",
    help: "JavaScript heap in use, in bytes.",
  });
  const cpu = registry.counter({
    name: "process_cpu_seconds_total",
    help: "User and system CPU time spent, in seconds.",
  });
  const start = registry.gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since the Unix epoch, in seconds.",
  });
  const startedAt = (Date.now() - performance.now()) / 1000;
  registry.onCollect(() => {
    const memory = Deno.memoryUsage();
    rss.set(memory.rss);
    heap.set(memory.heapUsed);
    const usage = process.cpuUsage();
    cpu.setTotal((usage.user + usage.system) / 1e6);
    start.set(startedAt);
  });
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}
