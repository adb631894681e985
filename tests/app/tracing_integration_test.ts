/**
 * Tracing end to end: vkubelet sends OTLP/HTTP to a real Jaeger (v1.75.0, built from Go modules
 * by tools/jaeger/jaeger.ts) on loopback, and the traces are read back through Jaeger's query
 * API. One pod created end to end is one trace — `pod.add`, `pod.sync` with `provider.createPod`
 * under it, and the status writes — and a kubelet API request (`kubectl logs`) is a server span.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { type JaegerSpan, type JaegerTrace, startJaeger } from "../../tools/jaeger/jaeger.ts";
import { eventually } from "../../tools/harness/wait.ts";

const tag = (span: JaegerSpan, key: string) => span.tags.find((t) => t.key === key)?.value;
const parentOf = (span: JaegerSpan) =>
  span.references.find((r) => r.refType === "CHILD_OF")?.spanID;

Deno.test({
  name: "one pod created end to end is one trace in Jaeger, and kubelet API requests are spans",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const cluster = await useCluster();
    await using jaeger = await startJaeger();
    const ns = await cluster.newNamespace("traces");
    const node = `vk-trace-${crypto.randomUUID().slice(0, 6)}`;
    const vk = await startVkubelet(cluster, {
      nodeName: node,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint, OTEL_BSP_SCHEDULE_DELAY: "200" },
    });
    try {
      const pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "traced", namespace: ns },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": node },
          tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
          containers: [{ name: "app", image: "nginx:1" }],
        },
      };
      await cluster.kubectlIn(ns)(["apply", "-f", "-"], JSON.stringify(pod));
      await cluster.kubectlIn(ns)(["wait", "--for=condition=Ready", "pod/traced", "--timeout=60s"]);
      await cluster.kubectlIn(ns)(["logs", "traced"]);
      const podTraces = await eventually("the pod's trace in Jaeger", async () => {
        const traces = await jaeger.traces("vkubelet", {
          tags: JSON.stringify({ "k8s.pod.name": "traced", "k8s.namespace.name": ns }),
        });
        const done = traces.some((t) =>
          t.spans.some((s) =>
            s.operationName === "pod.status.write" && tag(s, "k8s.pod.phase") === "Running"
          )
        );
        return done ? traces : undefined;
      }, 60_000);
      const created = podTraces.filter((t) => t.spans.some((s) => s.operationName === "pod.add"));
      assert.equal(created.length, 1, `traces with pod.add: ${created.length}`);
      const [trace] = created;
      console.log(`trace ${trace.traceID}: ${trace.spans.map((s) => s.operationName).join(", ")}`);
      const one = (name: string) => {
        const found = trace.spans.filter((s) => s.operationName === name);
        assert.ok(found.length >= 1, `no ${name} in ${trace.spans.map((s) => s.operationName)}`);
        return found[0];
      };
      const add = one("pod.add");
      const sync = one("pod.sync");
      const create = one("provider.createPod");
      const write = one("pod.status.write");
      assert.equal(parentOf(add), undefined, "pod.add starts the trace");
      assert.equal(parentOf(sync), add.spanID);
      assert.equal(parentOf(create), sync.spanID);
      assert.equal(parentOf(write), add.spanID);
      assert.ok(
        trace.spans.every((s) => s.traceID === trace.traceID),
        "the sync, the provider call and the status writes are in the add's trace",
      );
      const logs = await eventually("the kubelet API's span for kubectl logs", async () => {
        const traces: JaegerTrace[] = await jaeger.traces("vkubelet", {
          operation: "GET /containerLogs",
        });
        return traces.flatMap((t) => t.spans).find((s) => s.operationName === "GET /containerLogs");
      }, 30_000);
      assert.equal(tag(logs, "http.response.status_code"), 200);
      assert.equal(tag(logs, "span.kind"), "server");
    } finally {
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      const { code } = await vk.stop("SIGTERM");
      await cluster.kubectl(["delete", "node", node, "--wait=false"]);
      assert.equal(code, 0, vk.output().slice(-3000));
    }
  },
});
