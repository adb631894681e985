import assert from "node:assert/strict";
import type {
  SpanAttributes,
  StartSpanOptions,
  TraceContext,
  Tracer,
} from "../../../core/tracing.ts";
import { VkubeletMetrics } from "../../../core/metrics.ts";
import { podControllerHooks } from "../../../app/observe.ts";
import { sampleValue } from "../metrics_series.ts";
import { boundPod, startController } from "./_harness.ts";

interface Recorded {
  name: string;
  traceId: string;
  spanId: string;
  parent?: string;
  attributes: SpanAttributes;
  failed?: string;
  ended: boolean;
}

/** A tracer that keeps every span it starts. */
function recordingTracer(): Tracer & { spans: Recorded[] } {
  const spans: Recorded[] = [];
  let next = 0;
  return {
    spans,
    start(name: string, options: StartSpanOptions = {}) {
      const parent = options.parent as (TraceContext & { spanId: string }) | undefined;
      const spanId = `s${++next}`;
      const record: Recorded = {
        name,
        traceId: parent?.traceId ?? `t${next}`,
        spanId,
        parent: parent?.spanId,
        attributes: { ...options.attributes },
        ended: false,
      };
      spans.push(record);
      return {
        context: { traceId: record.traceId, spanId } as TraceContext,
        setAttribute: (k, v) => void (record.attributes[k] = v),
        fail: (err) => void (record.failed = String(err)),
        end: () => void (record.ended = true),
      };
    },
  };
}

Deno.test("a pod created end to end is one trace: the add, its sync with the provider call, its status writes", async () => {
  const tracer = recordingTracer();
  const t = startController({ deps: podControllerHooks(new VkubeletMetrics(), tracer) });
  t.api.pods.put(boundPod("web-0"));
  await t.controller.ready;
  await t.settle();
  const [root] = tracer.spans.filter((s) => s.name === "pod.add");
  assert.ok(root, `no pod.add span in ${tracer.spans.map((s) => s.name)}`);
  const trace = tracer.spans.filter((s) => s.traceId === root.traceId);
  const names = trace.map((s) => s.name);
  assert.deepEqual(names.slice(0, 3), ["pod.add", "pod.sync", "provider.createPod"]);
  assert.ok(names.includes("pod.status.write"), names.join());
  const byName = (n: string) => trace.find((s) => s.name === n)!;
  assert.equal(byName("pod.sync").parent, root.spanId);
  assert.equal(byName("provider.createPod").parent, byName("pod.sync").spanId);
  assert.equal(byName("pod.status.write").parent, root.spanId);
  assert.equal(byName("provider.createPod").attributes["k8s.pod.name"], "web-0");
  assert.ok(trace.every((s) => s.ended), "every span ended");
  assert.equal(
    tracer.spans.filter((s) => s.traceId !== root.traceId).length,
    0,
    "our own status write coming back through the watch starts no trace",
  );
  await t.stop();
});

Deno.test("a provider call that fails marks its span failed", async () => {
  const tracer = recordingTracer();
  const t = startController({ deps: { tracer } });
  t.provider.createError = () => new Error("quota exceeded");
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  const create = tracer.spans.find((s) => s.name === "provider.createPod");
  assert.match(create?.failed ?? "", /quota exceeded/);
  await t.stop();
});

Deno.test("a pod's start is timed from first sight to its Running write, and the queues are counted", async () => {
  const metrics = new VkubeletMetrics();
  const t = startController({ deps: podControllerHooks(metrics, undefined) });
  t.api.pods.put(boundPod("web-0"));
  await t.settle();
  const text = await metrics.render();
  assert.equal(sampleValue(text, "kubelet_pod_start_duration_seconds_count"), 1);
  assert.match(text, /kubelet_pod_start_duration_seconds_bucket\{le="3600"\} 1/);
  assert.equal(
    sampleValue(text, 'workqueue_adds_total{name="syncPodsFromKubernetes"}'),
    1,
  );
  assert.ok(sampleValue(text, 'workqueue_adds_total{name="syncPodStatusFromProvider"}')! >= 1);
  await t.stop();
});
