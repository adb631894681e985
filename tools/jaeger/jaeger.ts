/**
 * A real Jaeger (v1.75.0, `github.com/jaegertracing/jaeger/cmd/jaeger`) for the tracing tests and
 * the bench: built from Go modules once, cached under `.cache/bin/` by a hash of this folder's
 * go.mod and go.sum (as `tools/cluster/build.ts` builds the control plane), and started on
 * loopback with in-memory storage, an OTLP/HTTP receiver and the query API, each on a free port.
 *
 * ```ts
 * await using jaeger = await startJaeger({ signal });
 * // OTEL_EXPORTER_OTLP_ENDPOINT=jaeger.otlpEndpoint ...
 * const traces = await jaeger.traces("vkubelet");
 * ```
 * @module
 */
import { cacheDir } from "../cluster/build.ts";
import { freePort } from "../cluster/ports.ts";

const moduleDir = new URL(".", import.meta.url).pathname;
const PACKAGE = "github.com/jaegertracing/jaeger/cmd/jaeger";

/** The Jaeger version go.mod pins. */
export function jaegerVersion(): string {
  const gomod = Deno.readTextFileSync(`${moduleDir}go.mod`);
  const match = gomod.match(/^\s*github\.com\/jaegertracing\/jaeger (v[0-9.]+)/m);
  if (!match) {
    throw new Error(`${moduleDir}go.mod does not require github.com/jaegertracing/jaeger`);
  }
  return match[1];
}

async function sourceHash(): Promise<string> {
  const text = ["go.mod", "go.sum"].map((f) => `${f}\n${Deno.readTextFileSync(moduleDir + f)}`);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text.join("\n")));
  return Array.from(new Uint8Array(digest).slice(0, 6), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** Returns the path of the Jaeger binary, building it first (minutes on 2 cores) if needed. */
export async function ensureJaeger(options: { progress?: (line: string) => void } = {}) {
  const path = `${cacheDir}/bin/jaeger-${jaegerVersion()}-${await sourceHash()}`;
  try {
    await Deno.stat(path);
    return path;
  } catch {
    // Not built yet.
  }
  options.progress?.(`building Jaeger ${jaegerVersion()} from Go modules; later runs reuse it`);
  await Deno.mkdir(`${cacheDir}/bin`, { recursive: true });
  const tmp = `${path}.tmp-${Deno.pid}`;
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("go", {
      args: ["build", "-trimpath", "-ldflags", "-s -w", "-o", tmp, PACKAGE],
      cwd: moduleDir,
      stdout: "inherit",
      stderr: "piped",
    }).output();
  } catch (err) {
    throw new Error("cannot run `go`: Jaeger is built from Go modules; put Go 1.26 on PATH", {
      cause: err,
    });
  }
  if (!output.success) {
    await Deno.remove(tmp).catch(() => {});
    const tail = new TextDecoder().decode(output.stderr).split("\n").slice(-20).join("\n");
    throw new Error(`go build of Jaeger failed (exit ${output.code}):\n${tail}`);
  }
  await Deno.rename(tmp, path);
  return path;
}

/** One span as Jaeger's query API returns it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
}

/** One trace as Jaeger's query API returns it. */
export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
}

/** A running Jaeger; disposing of it stops it. */
export interface Jaeger extends AsyncDisposable {
  /** The OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  otlpEndpoint: string;
  /** The query API's base URL. */
  queryUrl: string;
  /** The traces of `service` Jaeger holds (its `/api/traces`), newest first. */
  traces(service: string, query?: Record<string, string>): Promise<JaegerTrace[]>;
}

/** Builds (if needed) and starts Jaeger on loopback; resolves once its query API answers. */
export async function startJaeger(options: { signal?: AbortSignal } = {}): Promise<Jaeger> {
  const binary = await ensureJaeger();
  const dir = await Deno.makeTempDir({ prefix: "vkubelet-jaeger-" });
  const [otlp, http, grpc, health] = [freePort(), freePort(), freePort(), freePort()];
  await Deno.writeTextFile(`${dir}/config.yaml`, config(otlp, http, grpc, health));
  const stop = new AbortController();
  const child = new Deno.Command(binary, {
    args: ["--config", `${dir}/config.yaml`],
    stdout: "null",
    stderr: "piped",
    signal: stop.signal,
  }).spawn();
  const logFile = await Deno.open(`${dir}/jaeger.log`, { write: true, create: true });
  const logged = child.stderr.pipeTo(logFile.writable).catch(() => {});
  const queryUrl = `http://127.0.0.1:${http}`;
  const dispose = async () => {
    stop.abort();
    await child.status.catch(() => {});
    await logged;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    await waitForQuery(queryUrl, child.status, options.signal);
  } catch (err) {
    const log = await Deno.readTextFile(`${dir}/jaeger.log`).catch(() => "");
    await dispose();
    throw new Error(`Jaeger did not start: ${err}\n${log.split("\n").slice(-15).join("\n")}`);
  }
  return {
    otlpEndpoint: `http://127.0.0.1:${otlp}`,
    queryUrl,
    async traces(service, query = {}) {
      const params = new URLSearchParams({ service, limit: "1000", ...query });
      const response = await fetch(`${queryUrl}/api/traces?${params}`);
      if (!response.ok) throw new Error(`Jaeger query answered ${response.status}`);
      return (await response.json()).data ?? [];
    },
    [Symbol.asyncDispose]: dispose,
  };
}

async function waitForQuery(url: string, exited: Promise<unknown>, signal?: AbortSignal) {
  let gone = false;
  exited.then(() => gone = true, () => gone = true);
  for (let attempt = 0; attempt < 300; attempt++) {
    signal?.throwIfAborted();
    if (gone) throw new Error("the process exited");
    try {
      const response = await fetch(`${url}/api/services`);
      await response.body?.cancel();
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("its query API did not answer within 30 s");
}

/** In-memory storage, OTLP/HTTP in, the query API out, all on 127.0.0.1; no self-tracing. */
function config(otlp: number, http: number, grpc: number, health: number): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:${health}
  jaeger_query:
    enable_tracing: false
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${http}
    grpc:
      endpoint: 127.0.0.1:${grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlp}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}
