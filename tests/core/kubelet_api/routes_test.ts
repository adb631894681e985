import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import type { StreamingContext, StreamingHandler } from "../../../core/kubelet_api/mod.ts";
import { bareProvider, setup, testPod } from "../../../tools/harness/kubelet_api_fakes.ts";

Deno.test("/pods lists the pod cache as a PodList", async () => {
  await using t = await setup();
  const res = await t.get("/pods");
  assert.equal(res.status, 200);
  const list = await res.json();
  assert.equal(list.kind, "PodList");
  assert.equal(list.apiVersion, "v1");
  assert.deepEqual(list.items.map((p: { metadata: { name: string } }) => p.metadata.name), ["web"]);
});

Deno.test("/runningpods/ lists the provider's pods", async () => {
  await using t = await setup({ podCache: () => [] });
  const list = await (await t.get("/runningpods/")).json();
  assert.equal(list.items.length, 1);
  assert.equal(list.items[0].status.phase, "Running");
});

Deno.test("health endpoints answer ok; /readyz follows the provider's ping", async () => {
  await using t = await setup();
  for (const path of ["/healthz", "/healthz/ping", "/livez", "/readyz"]) {
    const res = await t.get(path);
    assert.equal(res.status, 200, path);
    assert.equal(await res.text(), "ok");
  }
  t.mock.setPingError(new Error("backend down"));
  const res = await t.get("/readyz");
  assert.equal(res.status, 503);
  assert.match((await res.json()).message, /backend down/);
});

Deno.test("/stats/summary has the kubelet's schema; only_cpu_and_memory trims it", async () => {
  await using t = await setup();
  const full = await (await t.get("/stats/summary")).json();
  assert.equal(full.node.nodeName, "vk-test");
  assert.equal(full.pods.length, 1);
  const pod = full.pods[0];
  assert.deepEqual(pod.podRef, { name: "web", namespace: "default", uid: "uid-web" });
  assert.deepEqual(pod.containers.map((c: { name: string }) => c.name).sort(), ["app", "sidecar"]);
  assert.ok(pod.containers[0].cpu.usageNanoCores > 0);
  assert.ok(pod.containers[0].memory.workingSetBytes > 0);

  const trimmed = await (await t.get("/stats/summary?only_cpu_and_memory=true")).json();
  assert.deepEqual(Object.keys(trimmed.pods[0]).sort(), [
    "containers",
    "cpu",
    "memory",
    "podRef",
    "startTime",
  ]);
  const posted = await t.get("/stats/summary", {
    method: "POST",
    body: JSON.stringify({ only_cpu_and_memory: true }),
  });
  assert.equal(posted.status, 200);
  assert.equal((await posted.json()).pods[0].network, undefined);
});

Deno.test("/metrics/resource is Prometheus text with the series metrics-server reads", async () => {
  await using t = await setup();
  const res = await t.get("/metrics/resource");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  const text = await res.text();
  for (
    const series of [
      "node_cpu_usage_seconds_total",
      "node_memory_working_set_bytes",
      'container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"}',
      'container_memory_working_set_bytes{container="app",namespace="default",pod="web"}',
      "container_start_time_seconds",
    ]
  ) {
    assert.ok(text.includes(series), series);
  }
});

Deno.test("/metrics serves vkubelet's own metrics", async () => {
  await using t = await setup();
  t.metrics.workQueueDepth.set({ name: "pods" }, 4);
  t.metrics.podsByPhase.set({ phase: "Running" }, 1);
  (await t.get("/healthz")).body?.cancel();
  const text = await (await t.get("/metrics")).text();
  assert.match(text, /^vkubelet_workqueue_depth\{name="pods"\} 4$/m);
  assert.match(text, /^vkubelet_pods\{phase="Running"\} 1$/m);
  assert.match(
    text,
    /^vkubelet_kubelet_api_requests_total\{route="\/healthz",method="GET",code="200"\} 1$/m,
  );
  assert.match(text, /^process_resident_memory_bytes \d+/m);
  assert.match(text, /^process_cpu_seconds_total [\d.e-]+$/m);
});

Deno.test("a provider without stats or metrics answers 501", async () => {
  const pod = testPod("default", "web");
  await using t = await setup({ provider: bareProvider([pod]), pods: [pod] });
  for (const path of ["/stats/summary", "/metrics/resource"]) {
    const res = await t.get(path);
    assert.equal(res.status, 501, path);
    assert.equal((await res.json()).kind, "Status");
  }
});

Deno.test("an unknown path is a 404 Status after authentication", async () => {
  await using t = await setup();
  const anonymous = await t.app.request("/nope");
  assert.equal(anonymous.status, 401);
  await anonymous.body?.cancel();
  const res = await t.get("/nope");
  assert.equal(res.status, 404);
  assert.equal((await res.json()).reason, "NotFound");
});

Deno.test("exec, attach and portForward answer 501 without a streaming handler", async () => {
  await using t = await setup();
  for (
    const path of [
      "/exec/default/web/app?command=ls",
      "/attach/default/web/app",
      "/portForward/default/web",
    ]
  ) {
    const res = await t.get(path, { method: "POST" });
    assert.equal(res.status, 501, path);
    assert.match((await res.json()).message, /no streaming handler/);
  }
});

function recordingHandler(calls: Array<[string, StreamingContext]>): StreamingHandler {
  return {
    exec: (ctx) => void calls.push(["exec", ctx]),
    attach: (ctx) => void calls.push(["attach", ctx]),
    portForward: (ctx) =>
      ctx.query.get("port") === "0"
        ? new Response("bad port", { status: 400 })
        : void calls.push(["portForward", ctx]),
  };
}

Deno.test("streaming routes hand the upgraded socket to the handler", async () => {
  const calls: Array<[string, StreamingContext]> = [];
  await using t = await setup({ streaming: recordingHandler(calls) });
  const socket = new PassThrough();
  const upgrade = { socket, head: new Uint8Array([1, 2]), taken: false };
  const env = { ...t.admin, upgrade };
  const res = await t.app.request(
    "/exec/default/web/uid-web/sidecar?command=echo&command=hi&stdout=1",
    { method: "POST", headers: { upgrade: "SPDY/3.1", connection: "Upgrade" } },
    env,
  );
  await res.body?.cancel();
  assert.equal(upgrade.taken, true);
  const [kind, ctx] = calls[0];
  assert.equal(kind, "exec");
  assert.deepEqual(ctx.params, {
    namespace: "default",
    pod: "web",
    uid: "uid-web",
    container: "sidecar",
  });
  assert.deepEqual(ctx.query.getAll("command"), ["echo", "hi"]);
  assert.equal(ctx.user.username, "admin");
  assert.equal(ctx.socket, socket);
  assert.deepEqual([...ctx.head], [1, 2]);
  assert.equal(ctx.pod.metadata?.name, "web");

  const refused = { socket: new PassThrough(), head: new Uint8Array(), taken: false };
  const bad = await t.app.request("/portForward/default/web?port=0", {}, {
    ...t.admin,
    upgrade: refused,
  });
  assert.equal(bad.status, 400);
  assert.equal(await bad.text(), "bad port");
  assert.equal(refused.taken, false);
});

Deno.test("streaming routes check pod, uid, container and upgrade first", async () => {
  const calls: Array<[string, StreamingContext]> = [];
  await using t = await setup({ streaming: recordingHandler(calls) });
  const upgrade = () => ({
    ...t.admin,
    upgrade: { socket: new PassThrough(), head: new Uint8Array(), taken: false },
  });
  const cases: Array<[string, number]> = [
    ["/exec/default/nope/app", 404],
    ["/exec/default/web/wrong-uid/app", 404],
    ["/attach/default/web/nope", 404],
    ["/portForward/default/web/wrong-uid", 404],
  ];
  for (const [path, status] of cases) {
    const res = await t.app.request(path, { method: "POST" }, upgrade());
    assert.equal(res.status, status, path);
    await res.body?.cancel();
  }
  const plain = await t.get("/exec/default/web/app", { method: "POST" });
  assert.equal(plain.status, 400);
  assert.equal((await plain.json()).message, "Upgrade request required");
  assert.equal(calls.length, 0);
});

Deno.test("streaming routes answer 501 when the provider lacks the capability", async () => {
  const pod = testPod("default", "web");
  const calls: Array<[string, StreamingContext]> = [];
  await using t = await setup({
    provider: bareProvider([pod]),
    pods: [pod],
    streaming: recordingHandler(calls),
  });
  const res = await t.get("/attach/default/web/app", { method: "POST" });
  assert.equal(res.status, 501);
  assert.match((await res.json()).message, /not supported by this node's provider/);
});
