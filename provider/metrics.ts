/**
 * `/metrics/resource` in the Prometheus text format, derived from a stats summary the way the
 * kubelet derives it (kubernetes/kubernetes pkg/kubelet/metrics/collectors/resource_metrics.go):
 * the same series, HELP texts and label order, samples stamped with the stat's time in
 * milliseconds, families sorted by name, numbers printed as Go prints them.
 * @module
 */
import type { StatsSummary } from "./stats.ts";

interface Family {
  name: string;
  type: "counter" | "gauge";
  help: string;
  samples: { labels: string; value: number; timestampMs?: number }[];
}

/**
 * Formats a number as Go's `strconv.FormatFloat(v, 'g', -1, 64)`, which Prometheus uses.
 *
 * @example Usage
 * ```ts
 * import { formatGoFloat } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.equal(formatGoFloat(0.25), "0.25");
 * assert.equal(formatGoFloat(1234567), "1.234567e+06");
 * ```
 */
export function formatGoFloat(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value === 0) return "0";
  const [mantissa, exponentText] = value.toExponential().split("e");
  const exponent = Number(exponentText);
  // Go uses the exponent form for shortest 'g' when the exponent is < -4 or >= 6.
  if (exponent < -4 || exponent >= 6) {
    const sign = exponent < 0 ? "-" : "+";
    return `${mantissa}e${sign}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  return String(value);
}

const escape = (text: string) =>
  text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");

const labels = (pairs: Record<string, string>) =>
  `{${Object.keys(pairs).sort().map((k) => `${k}="${escape(pairs[k])}"`).join(",")}}`;

/**
 * The `/metrics/resource` text for `summary`.
 *
 * @example Usage
 * ```ts
 * import { metricsText } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const text = metricsText({
 *   node: { nodeName: "vk-0", startTime: "2026-12-01T10:00:00Z" },
 *   pods: [],
 * });
 * assert.match(text, /^# HELP /);
 * ```
 */
export function metricsText(summary: StatsSummary): string {
  const family = (name: string, type: Family["type"], help: string): Family => ({
    name,
    type,
    help,
    samples: [],
  });
  const containerCpu = family(
    "container_cpu_usage_seconds_total",
    "counter",
    "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
  );
  const containerMemory = family(
    "container_memory_working_set_bytes",
    "gauge",
    "[STABLE] Current working set of the container in bytes",
  );
  const containerStart = family(
    "container_start_time_seconds",
    "gauge",
    "[STABLE] Start time of the container since unix epoch in seconds",
  );
  const nodeCpu = family(
    "node_cpu_usage_seconds_total",
    "counter",
    "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
  );
  const nodeMemory = family(
    "node_memory_working_set_bytes",
    "gauge",
    "[STABLE] Current working set of the node in bytes",
  );
  const podCpu = family(
    "pod_cpu_usage_seconds_total",
    "counter",
    "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
  );
  const podMemory = family(
    "pod_memory_working_set_bytes",
    "gauge",
    "[STABLE] Current working set of the pod in bytes",
  );
  const scrapeHelp = "1 if there was an error while getting container metrics, 0 otherwise";
  const resourceScrapeError = family("resource_scrape_error", "gauge", `[STABLE] ${scrapeHelp}`);
  const scrapeError = family("scrape_error", "gauge", `[ALPHA] ${scrapeHelp}`);

  const { cpu, memory } = summary.node;
  if (cpu?.usageCoreNanoSeconds !== undefined) {
    nodeCpu.samples.push({
      labels: "",
      value: cpu.usageCoreNanoSeconds / 1e9,
      timestampMs: Date.parse(cpu.time),
    });
  }
  if (memory?.workingSetBytes !== undefined) {
    nodeMemory.samples.push({
      labels: "",
      value: memory.workingSetBytes,
      timestampMs: Date.parse(memory.time),
    });
  }
  for (const pod of summary.pods) {
    const podLabels = { namespace: pod.podRef.namespace, pod: pod.podRef.name };
    if (pod.cpu?.usageCoreNanoSeconds !== undefined) {
      podCpu.samples.push({
        labels: labels(podLabels),
        value: pod.cpu.usageCoreNanoSeconds / 1e9,
        timestampMs: Date.parse(pod.cpu.time),
      });
    }
    if (pod.memory?.workingSetBytes !== undefined) {
      podMemory.samples.push({
        labels: labels(podLabels),
        value: pod.memory.workingSetBytes,
        timestampMs: Date.parse(pod.memory.time),
      });
    }
    for (const c of pod.containers) {
      const l = labels({ ...podLabels, container: c.name });
      const cpuSeconds = c.cpu?.usageCoreNanoSeconds;
      const workingSet = c.memory?.workingSetBytes;
      // metrics-server drops the whole pod when a container has a start time but lacks CPU or
      // memory (kubernetes-sigs/metrics-server pkg/scraper/client/resource/decode.go), as for a
      // container that has exited or not started: leave such containers out altogether.
      if (cpuSeconds !== undefined && workingSet !== undefined) {
        containerStart.samples.push({ labels: l, value: Date.parse(c.startTime) / 1000 });
      }
      if (c.cpu?.usageCoreNanoSeconds !== undefined) {
        containerCpu.samples.push({
          labels: l,
          // metrics-server also drops the pod when a container's CPU counter is 0 (decode.go):
          // an idle container a backend measures coarsely (Zun's TIME in whole seconds, a rate of
          // 0 from CloudWatch or Azure Monitor) has spent something; 1 ns is the least that is.
          value: Math.max(1, c.cpu.usageCoreNanoSeconds) / 1e9,
          timestampMs: Date.parse(c.cpu.time),
        });
      }
      if (c.memory?.workingSetBytes !== undefined) {
        containerMemory.samples.push({
          labels: l,
          value: c.memory.workingSetBytes,
          timestampMs: Date.parse(c.memory.time),
        });
      }
    }
  }
  resourceScrapeError.samples.push({ labels: "", value: 0 });
  scrapeError.samples.push({ labels: "", value: 0 });
  const families = [
    containerCpu,
    containerMemory,
    containerStart,
    nodeCpu,
    nodeMemory,
    podCpu,
    podMemory,
    resourceScrapeError,
    scrapeError,
  ];
  return families.filter((f) => f.samples.length > 0).map(render).join("");
}

function render(family: Family): string {
  const lines = [`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`];
  const samples = [...family.samples].sort((a, b) =>
    a.labels < b.labels ? -1 : a.labels > b.labels ? 1 : 0
  );
  for (const s of samples) {
    const stamp = s.timestampMs === undefined ? "" : ` ${s.timestampMs}`;
    lines.push(`${family.name}${s.labels} ${formatGoFloat(s.value)}${stamp}`);
  }
  return lines.join("\n") + "\n";
}
