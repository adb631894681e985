/**
 * The OpenTelemetry Collector of ./build.sh run as a node's log agent for the pod-log tests and
 * the bench: the config is the one docs/logging.md gives operators (its `yaml` block, with the
 * pod log directory and the output file put in place of `/var/log/pods` and
 * `/var/log/vkubelet-pods.json`), plus a second config file that only quiets the collector's own
 * telemetry (no metrics port). The file exporter's output is read back as records with the
 * metadata the filelog receiver's `container` operator found.
 * @module
 */
const here = new URL(".", import.meta.url).pathname;
const docsPath = new URL("../../docs/logging.md", import.meta.url).pathname;
const version = "0.165.0";
/** Where ./build.sh puts the binary. */
export const COLLECTOR_BINARY = new URL(
  `../../.cache/otelcol-v${version}/otelcol-vkubelet`,
  import.meta.url,
).pathname;

/**
 * The collector's path, built by ./build.sh when it is missing (minutes); throws if the build
 * fails, so a test that needs it fails instead of skipping.
 */
export async function collectorBinary(): Promise<string> {
  if (await Deno.stat(COLLECTOR_BINARY).then((s) => s.isFile, () => false)) {
    return COLLECTOR_BINARY;
  }
  const out = await new Deno.Command("bash", {
    args: [`${here}build.sh`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-15).join("\n");
    throw new Error(
      `Building the OpenTelemetry Collector with tools/otelcol/build.sh failed (it needs Go and the Go module proxy); run it by hand to see why:\n${err}`,
    );
  }
  return COLLECTOR_BINARY;
}

/** The collector config of docs/logging.md for `podLogDir`, writing to `outFile`. */
export async function docsCollectorConfig(podLogDir: string, outFile: string): Promise<string> {
  const docs = await Deno.readTextFile(docsPath);
  const block = docs.match(/## OpenTelemetry Collector[\s\S]*?```yaml\n([\s\S]*?)```/)?.[1];
  if (!block?.includes("/var/log/pods/") || !block.includes("/var/log/vkubelet-pods.json")) {
    throw new Error(
      "docs/logging.md has no collector config naming /var/log/pods/ and /var/log/vkubelet-pods.json in its OpenTelemetry Collector section; keep the yaml block there",
    );
  }
  return block.replaceAll("/var/log/pods/", `${podLogDir}/`)
    .replaceAll("/var/log/vkubelet-pods.json", outFile);
}

/** One log record as the collector exported it. */
export interface CollectorRecord {
  namespace?: string;
  pod?: string;
  uid?: string;
  container?: string;
  /** `k8s.container.restart_count`, as the operator gives it (a string). */
  restartCount?: string;
  body: string;
  /** `log.iostream`. */
  stream?: string;
  /** The record's time, ns since the epoch (from the CRI line). */
  timeUnixNano: bigint;
  /** When the collector read it, ns since the epoch. */
  observedUnixNano: bigint;
}

/** A running collector. */
export interface RunningCollector {
  /** The config it runs with (docs/logging.md's, paths replaced). */
  config: string;
  pid: number;
  /** Every record exported so far, in the order of the output file. */
  records(): Promise<CollectorRecord[]>;
  /** What it logged (warnings and errors). */
  output(): string;
  /** Stops it (SIGTERM, which flushes the exporter) and removes its scratch files. */
  stop(): Promise<void>;
}

/** Options for {@link startCollector}. */
export interface StartCollectorOptions {
  /** The pod log directory it tails (`--pod-log-dir`). */
  podLogDir: string;
  /** A directory for its config and output; made when missing. */
  workDir: string;
}

/** Starts the collector on `podLogDir` with docs/logging.md's config. */
export async function startCollector(options: StartCollectorOptions): Promise<RunningCollector> {
  const binary = await collectorBinary();
  const { workDir } = options;
  await Deno.mkdir(workDir, { recursive: true });
  const outFile = `${workDir}/logs.json`;
  const config = await docsCollectorConfig(options.podLogDir, outFile);
  await Deno.writeTextFile(`${workDir}/config.yaml`, config);
  await Deno.writeTextFile(
    `${workDir}/quiet.yaml`,
    "service:\n  telemetry:\n    logs: { level: warn }\n    metrics: { level: none }\n",
  );
  const child = new Deno.Command(binary, {
    args: [`--config=${workDir}/config.yaml`, `--config=${workDir}/quiet.yaml`],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let output = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) output += chunk;
  };
  const collecting = Promise.all([collect(child.stdout), collect(child.stderr)]);
  let stopped = false;
  return {
    config,
    pid: child.pid,
    output: () => output,
    records: async () => parseExport(await Deno.readTextFile(outFile).catch(() => "")),
    async stop() {
      if (!stopped) {
        stopped = true;
        try {
          child.kill("SIGTERM");
        } catch { /* already gone */ }
        const timer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch { /* gone */ }
        }, 10_000);
        await collecting;
        await child.status;
        clearTimeout(timer);
      }
    },
  };
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string };
}

function attributes(list: OtlpAttribute[] | undefined): Map<string, string> {
  return new Map((list ?? []).map((a) => [a.key, a.value.stringValue ?? a.value.intValue ?? ""]));
}

/** The file exporter's output (one OTLP JSON request a line) as records; a torn last line is left. */
export function parseExport(text: string): CollectorRecord[] {
  const records: CollectorRecord[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch {
      continue; // the exporter is mid-write
    }
    for (const rl of request.resourceLogs ?? []) {
      const res = attributes(rl.resource?.attributes);
      for (const sl of rl.scopeLogs ?? []) {
        for (const r of sl.logRecords ?? []) {
          const attrs = attributes(r.attributes);
          records.push({
            namespace: res.get("k8s.namespace.name"),
            pod: res.get("k8s.pod.name"),
            uid: res.get("k8s.pod.uid"),
            container: res.get("k8s.container.name"),
            restartCount: res.get("k8s.container.restart_count"),
            body: r.body?.stringValue ?? "",
            stream: attrs.get("log.iostream"),
            timeUnixNano: BigInt(r.timeUnixNano ?? "0"),
            observedUnixNano: BigInt(r.observedTimeUnixNano ?? "0"),
          });
        }
      }
    }
  }
  return records;
}
