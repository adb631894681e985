/**
 * A pod's trace: each informer event that sets work going (the pod added, its spec changed, it
 * is deleting or gone) starts a trace of its own, and the work it causes hangs under it — the
 * sync (`pod.sync`, with its provider calls under it: `provider.createPod`, ...) and the status
 * writes (`pod.status.write`), so one pod created end to end is one trace. Status-only updates
 * (our own writes coming back through the watch) start none. Every function is a no-op without
 * a tracer.
 * @module
 */
import { podKeyOf } from "../../provider/mod.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type SpanAttributes, traced } from "../tracing.ts";
import type { PodContext } from "./pod_context.ts";

/** The informer events that start a trace. */
export type PodEvent = "add" | "update" | "delete";

/** The pod's identity as span attributes (OpenTelemetry's `k8s.*` resource conventions). */
function podAttributes(pod: Pod): SpanAttributes {
  return {
    "k8s.namespace.name": pod.metadata?.namespace ?? "",
    "k8s.pod.name": pod.metadata?.name ?? "",
    "k8s.pod.uid": pod.metadata?.uid ?? "",
  };
}

/** Starts the trace of an informer event for a pod the controller holds (span `pod.<event>`). */
export function traceEvent(ctx: PodContext, key: string, event: PodEvent, pod: Pod): void {
  const state = ctx.tracer ? ctx.states.get(key) : undefined;
  if (!state) return;
  const span = ctx.tracer!.start(`pod.${event}`, { attributes: podAttributes(pod) });
  span.end();
  state.trace = span.context;
}

/** Runs one sync of `key` in a `pod.sync` span under the pod's current trace. */
export function tracedSync<T>(ctx: PodContext, key: string, fn: () => Promise<T>): Promise<T> {
  const state = ctx.tracer ? ctx.states.get(key) : undefined;
  if (!state) return fn();
  return traced(ctx.tracer, "pod.sync", state.trace, async (span) => {
    state.syncTrace = span?.context;
    try {
      return await fn();
    } finally {
      state.syncTrace = undefined;
    }
  }, { "vkubelet.pod.key": key });
}

/** Runs a provider call for `pod` in a `provider.<call>` span under the sync in progress. */
export function tracedProvider<T>(
  ctx: PodContext,
  pod: Pod,
  call: string,
  fn: () => Promise<T>,
): Promise<T> {
  const state = ctx.tracer ? ctx.states.get(podKeyOf(pod)) : undefined;
  if (!state) return fn();
  return traced(
    ctx.tracer,
    `provider.${call}`,
    state.syncTrace ?? state.trace,
    fn,
    podAttributes(pod),
  );
}

/** Runs a status write of `pod` in a `pod.status.write` span under the pod's current trace. */
export function tracedStatusWrite<T>(
  ctx: PodContext,
  pod: Pod,
  phase: string | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const state = ctx.tracer ? ctx.states.get(podKeyOf(pod)) : undefined;
  if (!state) return fn();
  return traced(ctx.tracer, "pod.status.write", state.trace, fn, {
    ...podAttributes(pod),
    "k8s.pod.phase": phase ?? "",
  });
}
