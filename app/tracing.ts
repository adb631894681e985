/**
 * Turns tracing on when asked — `--trace-exporter otlp`, or OpenTelemetry's own
 * `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` — and only then loads the
 * OpenTelemetry SDK (`./tracing_otel.ts`, imported on demand), so a vkubelet with tracing off
 * loads none of it. `OTEL_SDK_DISABLED=true` keeps it off whatever else is set.
 * @module
 */
import type { Tracer } from "../core/tracing.ts";

/** What {@link startTracing} reads. */
export interface TracingOptions {
  /** `--trace-exporter`. */
  traceExporter?: "otlp";
  /** `--trace-sample-rate`, in percent. */
  traceSampleRate: number;
  /** The process environment (`OTEL_*`). */
  env: Record<string, string | undefined>;
  /** The node name, a resource attribute of every span (`k8s.node.name`). */
  nodeName?: string;
  /** vkubelet's version, the service version. */
  version: string;
}

/** A running tracer and how to stop it (sending what is buffered). */
export interface Tracing {
  tracer: Tracer;
  /** Where spans go. */
  endpoint: string;
  /** Sends the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

/** The OTLP/HTTP traces URL from OpenTelemetry's variables (the exporter's own rules). */
export function tracesEndpoint(env: Record<string, string | undefined>): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || "http://localhost:4318";
  return `${base.replace(/\/+$/, "")}/v1/traces`;
}

/** True when the options or the environment ask for traces. */
export function tracingWanted(options: Pick<TracingOptions, "traceExporter" | "env">): boolean {
  const { env } = options;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  return options.traceExporter === "otlp" || !!env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() ||
    !!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
}

/** Starts tracing if it is wanted; undefined (and nothing loaded) otherwise. */
export async function startTracing(options: TracingOptions): Promise<Tracing | undefined> {
  if (!tracingWanted(options)) return undefined;
  const endpoint = tracesEndpoint(options.env);
  try {
    new URL(endpoint);
  } catch {
    throw new TypeError(
      `the OTLP traces endpoint ${JSON.stringify(endpoint)} is not a URL; set ` +
        "OTEL_EXPORTER_OTLP_ENDPOINT to one such as http://127.0.0.1:4318",
    );
  }
  const { otelTracing } = await import("./tracing_otel.ts");
  return otelTracing({
    endpoint,
    sampleRate: options.traceSampleRate / 100,
    serviceName: options.env.OTEL_SERVICE_NAME?.trim() || "vkubelet",
    nodeName: options.nodeName,
    version: options.version,
  });
}
