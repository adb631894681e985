/**
 * What metrics-server makes of a kubelet's `/metrics/resource`, for tests: a decoder that keeps
 * the rules of kubernetes-sigs/metrics-server (v0.9.0) `pkg/scraper/client/resource/decode.go`
 * (which series count, how labels are found, which points are dropped) and of
 * `pkg/storage/{node,pod}.go` (what two consecutive scrapes must look like before `kubectl top`
 * shows anything), and that says why, instead of silently dropping as metrics-server does.
 * @module
 */

/** One node or container point, as metrics-server stores it. */
export interface MetricsPoint {
  /** Unix ms of the sample; metrics-server takes the last series' timestamp. */
  timestampMs: number;
  /** Cumulative CPU in core-nanoseconds (`uint64(seconds * 1e9)`). */
  cpuNs: number;
  memoryBytes: number;
  /** `container_start_time_seconds` in ms; 0 when absent. */
  startMs: number;
}

/** A decoded scrape: what metrics-server keeps, and why it dropped the rest. */
export interface DecodedScrape {
  node?: MetricsPoint;
  /** `namespace/pod` → container → point; only pods metrics-server keeps. */
  pods: Map<string, Map<string, MetricsPoint>>;
  /** Human-readable reasons for every dropped node or pod and every unparsable line. */
  problems: string[];
}

const NODE_CPU = "node_cpu_usage_seconds_total";
const NODE_MEMORY = "node_memory_working_set_bytes";
const CONTAINER_CPU = "container_cpu_usage_seconds_total";
const CONTAINER_MEMORY = "container_memory_working_set_bytes";
const CONTAINER_START = "container_start_time_seconds";

const matches = (series: string, name: string) =>
  series.startsWith(name) && (series.length === name.length || series[name.length] === "{");

/** metrics-server finds labels by substring search (`parseContainerLabels`), not by parsing. */
function labelBySearch(labels: string, name: string): string {
  const tag = `${name}="`;
  const i = labels.indexOf(tag);
  if (i < 0) return "";
  const start = i + tag.length;
  return labels.slice(start, labels.indexOf('"', start));
}

/** Splits a sample line into series (name and raw labels), value and optional timestamp. */
function splitSample(line: string): [string, number, number | undefined] | undefined {
  const close = line.lastIndexOf("}");
  const seriesEnd = close >= 0 ? close + 1 : line.indexOf(" ");
  if (seriesEnd <= 0) return undefined;
  const rest = line.slice(seriesEnd).trim().split(/\s+/);
  if (rest.length < 1 || rest.length > 2) return undefined;
  const value = Number(rest[0]);
  const timestamp = rest[1] === undefined ? undefined : Number(rest[1]);
  if (Number.isNaN(value) && rest[0] !== "NaN") return undefined;
  if (timestamp !== undefined && !Number.isInteger(timestamp)) return undefined;
  return [line.slice(0, seriesEnd), value, timestamp];
}

const emptyPoint = (): MetricsPoint => ({ timestampMs: 0, cpuNs: 0, memoryBytes: 0, startMs: 0 });

/**
 * Decodes `/metrics/resource` text as metrics-server does; `requestTimeMs` stands in for
 * samples without a timestamp (metrics-server uses the time it sent the request).
 */
export function decodeScrape(text: string, requestTimeMs: number): DecodedScrape {
  const problems: string[] = [];
  const node = emptyPoint();
  const pods = new Map<string, Map<string, MetricsPoint>>();
  const containerPoint = (labels: string) => {
    const key = `${labelBySearch(labels, "namespace")}/${labelBySearch(labels, "pod")}`;
    const container = labelBySearch(labels, "container");
    if (!pods.has(key)) pods.set(key, new Map());
    const points = pods.get(key)!;
    if (!points.has(container)) points.set(container, emptyPoint());
    return points.get(container)!;
  };
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const sample = splitSample(line);
    if (!sample) {
      problems.push(`line ${index + 1} is not a Prometheus sample: ${line}`);
      continue;
    }
    const [series, value, timestamp = requestTimeMs] = sample;
    if (matches(series, NODE_CPU)) {
      node.cpuNs = Math.trunc(value * 1e9);
      node.timestampMs = timestamp;
    } else if (matches(series, NODE_MEMORY)) {
      node.memoryBytes = Math.trunc(value);
      node.timestampMs = timestamp;
    } else if (matches(series, CONTAINER_CPU)) {
      const point = containerPoint(series.slice(CONTAINER_CPU.length));
      point.cpuNs = Math.trunc(value * 1e9);
      point.timestampMs = timestamp;
    } else if (matches(series, CONTAINER_MEMORY)) {
      const point = containerPoint(series.slice(CONTAINER_MEMORY.length));
      point.memoryBytes = Math.trunc(value);
      point.timestampMs = timestamp;
    } else if (matches(series, CONTAINER_START)) {
      containerPoint(series.slice(CONTAINER_START.length)).startMs = Math.trunc(value * 1000);
    }
  }
  const decoded: DecodedScrape = { pods: new Map(), problems };
  if (node.timestampMs === 0 || node.cpuNs === 0 || node.memoryBytes === 0) {
    problems.push(
      `node dropped: needs ${NODE_CPU} and ${NODE_MEMORY} above zero (cpu ${node.cpuNs} ns, ` +
        `memory ${node.memoryBytes} B)`,
    );
  } else {
    decoded.node = node;
  }
  for (const [pod, containers] of pods) {
    // checkContainerMetrics: one container at zero CPU or memory drops the whole pod.
    const zero = [...containers].find(([, p]) => p.cpuNs === 0 || p.memoryBytes === 0);
    if (zero) {
      problems.push(
        `pod ${pod} dropped: container "${zero[0]}" has cpu ${zero[1].cpuNs} ns, memory ` +
          `${zero[1].memoryBytes} B (every container needs both series above zero)`,
      );
    } else {
      decoded.pods.set(pod, containers);
    }
  }
  return decoded;
}

/**
 * What stops metrics-server from computing usage out of two consecutive scrapes of one node
 * (`resourceUsage` and `Store` in pkg/storage): a timestamp that does not advance, a start time
 * that moves, a cumulative CPU that goes down, or a container missing from either scrape.
 */
export function usageProblems(previous: DecodedScrape, last: DecodedScrape): string[] {
  const problems: string[] = [];
  const check = (what: string, prev: MetricsPoint, next: MetricsPoint) => {
    if (!(next.timestampMs > prev.timestampMs)) {
      problems.push(
        `${what}: timestamp ${next.timestampMs} does not advance past ${prev.timestampMs}`,
      );
    }
    if (next.cpuNs < prev.cpuNs) {
      problems.push(`${what}: cumulative CPU went down from ${prev.cpuNs} to ${next.cpuNs} ns`);
    }
    if (next.startMs < prev.startMs) problems.push(`${what}: start time went back`);
    if (next.startMs !== 0 && !(next.startMs < prev.timestampMs)) {
      problems.push(`${what}: start time ${next.startMs} is not before the previous sample`);
    }
  };
  if (previous.node && last.node) check("node", previous.node, last.node);
  else problems.push("node: missing from one of the scrapes");
  for (const [pod, containers] of last.pods) {
    const before = previous.pods.get(pod);
    if (!before) {
      problems.push(`pod ${pod}: missing from the previous scrape`);
      continue;
    }
    for (const [name, point] of containers) {
      const prev = before.get(name);
      if (!prev) problems.push(`pod ${pod} container ${name}: missing from the previous scrape`);
      else check(`pod ${pod} container ${name}`, prev, point);
    }
  }
  return problems;
}
