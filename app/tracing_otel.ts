/**
 * The {@link Tracer} backed by OpenTelemetry's trace SDK, exporting over OTLP/HTTP (JSON) in
 * batches. Imported only by `./tracing.ts` when tracing is on.
 * @module
 */
import {
  type Context,
  context,
  type Span as OtelSpan,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { Span, StartSpanOptions, TraceContext, Tracer } from "../core/tracing.ts";
import type { Tracing } from "./tracing.ts";

/** What {@link otelTracing} needs. */
export interface OtelTracingOptions {
  endpoint: string;
  /** Fraction of new traces kept (children follow their parent). */
  sampleRate: number;
  serviceName: string;
  nodeName?: string;
  version: string;
}

/** Our trace context: the OpenTelemetry context holding the span. */
interface OtelTraceContext extends TraceContext {
  readonly otel: Context;
}

/** Starts the SDK with a batching OTLP/HTTP exporter. */
export function otelTracing(options: OtelTracingOptions): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      "service.name": options.serviceName,
      "service.version": options.version,
      ...options.nodeName ? { "k8s.node.name": options.nodeName } : {},
    }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRate) }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: options.endpoint }))],
  });
  const otel = provider.getTracer("vkubelet", options.version);
  const tracer: Tracer = {
    start(name: string, start: StartSpanOptions = {}): Span {
      const parent = (start.parent as OtelTraceContext | undefined)?.otel ?? context.active();
      const span = otel.startSpan(name, {
        attributes: start.attributes,
        kind: start.kind === "server" ? SpanKind.SERVER : SpanKind.INTERNAL,
        root: start.parent === undefined,
      }, parent);
      return wrap(span, trace.setSpan(parent, span));
    },
  };
  return {
    tracer,
    endpoint: options.endpoint,
    shutdown: () => provider.shutdown(),
  };
}

function wrap(span: OtelSpan, otel: Context): Span {
  const ctx: OtelTraceContext = { traceId: span.spanContext().traceId, otel };
  return {
    context: ctx,
    setAttribute: (key, value) => void span.setAttribute(key, value),
    fail: (err) => {
      const message = err instanceof Error ? err.message : String(err);
      span.setStatus({ code: SpanStatusCode.ERROR, message });
      if (err instanceof Error) span.recordException(err);
    },
    end: () => span.end(),
  };
}
