/**
 * The tracing seam the controllers and the kubelet API write spans through: a small interface
 * of our own, so that nothing in `core/` imports OpenTelemetry. `app/tracing.ts` loads the
 * OpenTelemetry SDK (lazily, only when tracing is on) and hands in a {@link Tracer} backed by it;
 * with tracing off there is no tracer at all and the callers skip the spans.
 *
 * ```ts
 * const root = tracer.start("pod.add", { attributes: { "k8s.pod.name": "web-0" } });
 * root.end();
 * await traced(tracer, "pod.sync", root.context, () => syncIt());
 * ```
 * @module
 */

/** Span attribute values, as OpenTelemetry allows them. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** Where a span belongs in its trace; opaque outside the tracer that made it. */
export interface TraceContext {
  readonly traceId: string;
}

/** One span in progress. */
export interface Span {
  /** Its context, to start children under. */
  readonly context: TraceContext;
  /** Adds or replaces an attribute. */
  setAttribute(key: string, value: string | number | boolean): void;
  /** Marks the span failed with this error. */
  fail(err: unknown): void;
  /** Ends the span (once). */
  end(): void;
}

/** Options for {@link Tracer.start}. */
export interface StartSpanOptions {
  /** The parent; none starts a new trace. */
  parent?: TraceContext;
  attributes?: SpanAttributes;
  /** `server` for requests served (the kubelet API), else `internal`. */
  kind?: "internal" | "server";
}

/** Starts spans; see the module doc. */
export interface Tracer {
  /** Starts a span; end it with {@link Span.end}. */
  start(name: string, options?: StartSpanOptions): Span;
}

/**
 * Runs `fn` in a span named `name` under `parent` (ended when `fn` settles, failed if it throws);
 * without a tracer it only runs `fn`.
 */
export async function traced<T>(
  tracer: Tracer | undefined,
  name: string,
  parent: TraceContext | undefined,
  fn: (span: Span | undefined) => Promise<T> | T,
  attributes?: SpanAttributes,
): Promise<T> {
  if (!tracer) return await fn(undefined);
  const span = tracer.start(name, { parent, attributes });
  try {
    return await fn(span);
  } catch (err) {
    span.fail(err);
    throw err;
  } finally {
    span.end();
  }
}
