import assert from "node:assert/strict";
import { getLogger } from "../../base/log.ts";
import { VkubeletMetrics } from "../../core/metrics.ts";
import { WorkQueue } from "../../core/pods/work_queue.ts";
import { KubeClient } from "../../k8s/client.ts";
import type { ConnectionConfig } from "../../k8s/config/types.ts";
import { kubeClientHooks } from "../../app/observe.ts";
import { FakeClock, flush } from "../fakes/clock.ts";
import { sampleValue } from "./metrics_series.ts";

Deno.test("a work queue's adds, waits, work and retries show as client-go's workqueue_* series", async () => {
  const metrics = new VkubeletMetrics();
  const clock = new FakeClock();
  let failOnce = true;
  const queue = new WorkQueue({
    clock,
    log: getLogger(["vkubelet", "test"]),
    metrics: metrics.standard.queue("syncPodsFromKubernetes"),
    process: async (key) => {
      await clock.sleep(2_000);
      if (key === "a" && failOnce) {
        failOnce = false;
        throw new Error("provider is busy");
      }
    },
  });
  queue.add("a");
  queue.add("b");
  queue.add("b"); // deduplicated: not an add
  const before = await metrics.render();
  const q = '{name="syncPodsFromKubernetes"}';
  assert.equal(sampleValue(before, `workqueue_depth${q}`), 2);
  assert.equal(sampleValue(before, `workqueue_adds_total${q}`), 2);
  const abort = new AbortController();
  const running = queue.run(abort.signal);
  await flush();
  queue.add("b"); // while "b" is processed: counted now, in the depth too, as client-go does
  const during = await metrics.render();
  assert.equal(sampleValue(during, `workqueue_depth${q}`), 1);
  assert.equal(sampleValue(during, `workqueue_adds_total${q}`), 3);
  await clock.advance(2_000); // both processed; "a" failed and waits for its retry; "b" again
  await clock.advance(1_000);
  await clock.advance(2_000);
  await flush();
  await clock.advance(2_000);
  await flush();
  abort.abort();
  await running;
  const after = await metrics.render();
  assert.equal(sampleValue(after, `workqueue_depth${q}`), 0);
  assert.equal(sampleValue(after, `workqueue_adds_total${q}`), 4, "the retry came back as an add");
  assert.equal(sampleValue(after, `workqueue_retries_total${q}`), 1);
  assert.equal(sampleValue(after, `workqueue_queue_duration_seconds_count${q}`), 4);
  assert.equal(sampleValue(after, `workqueue_work_duration_seconds_count${q}`), 4);
  assert.equal(sampleValue(after, `workqueue_work_duration_seconds_sum${q}`), 8);
  // client-go's buckets: ExponentialBuckets(10e-9, 10, 10), 10 ns to 10 s.
  assert.match(after, /workqueue_work_duration_seconds_bucket\{le="1e-8",name=/);
  assert.match(after, /workqueue_work_duration_seconds_bucket\{le="10",name=/);
});

function connection(server: string): ConnectionConfig {
  return { server, namespace: "default", source: "test" };
}

Deno.test("the client's requests show as client-go's rest_client_* series, every attempt counted", async () => {
  let answers = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    answers++;
    return answers === 1
      ? new Response("{}", { status: 429, headers: { "retry-after": "0" } })
      : Response.json({ kind: "Pod" });
  });
  const host = `127.0.0.1:${server.addr.port}`;
  const metrics = new VkubeletMetrics();
  try {
    using kube = new KubeClient(connection(`http://${host}`), {
      ...kubeClientHooks(metrics),
      retry: { initialBackoffMs: 1, maxBackoffMs: 1 },
    });
    await kube.request({ path: "/api/v1/namespaces/default/pods/web" });
  } finally {
    await server.shutdown();
  }
  const text = await metrics.render();
  assert.equal(
    sampleValue(text, `rest_client_requests_total{code="429",method="GET",host="${host}"}`),
    1,
  );
  assert.equal(
    sampleValue(text, `rest_client_requests_total{code="200",method="GET",host="${host}"}`),
    1,
  );
  assert.equal(
    sampleValue(text, `rest_client_request_duration_seconds_count{verb="GET",host="${host}"}`),
    1,
    "one latency per request, its retry included",
  );
  assert.match(text, /rest_client_request_duration_seconds_bucket\{le="0.005",verb="GET"/);
  assert.equal(sampleValue(text, `vkubelet_kube_api_requests_total{verb="GET",code="200"}`), 1);
});

Deno.test("a request that gets no answer is counted with code <error>, as client-go counts it", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close(); // Nothing listens there now.
  const metrics = new VkubeletMetrics();
  using kube = new KubeClient(connection(`http://127.0.0.1:${port}`), {
    ...kubeClientHooks(metrics),
    retry: { maxRetries: 0 },
  });
  await assert.rejects(kube.request({ method: "PATCH", path: "/api/v1/nodes/vk", body: {} }));
  const text = await metrics.render();
  assert.equal(
    sampleValue(
      text,
      `rest_client_requests_total{code="<error>",method="PATCH",host="127.0.0.1:${port}"}`,
    ),
    1,
  );
});
