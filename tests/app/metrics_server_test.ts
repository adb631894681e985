import assert from "node:assert/strict";
// As in vkubelet, the kubelet API's server library is loaded (it replaces the global Response).
import "@hono/node-server";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { loadConfig } from "../../app/config/config.ts";
import { parseHostPort } from "../../app/config/schema.ts";
import { getLogger } from "../../base/log.ts";
import { VkubeletMetrics } from "../../core/metrics.ts";
import {
  metricsHandler,
  MetricsListenError,
  observePodController,
  serveMetrics,
} from "../../app/metrics_server.ts";
import { ALWAYS_HEALTHY, HealthMonitor } from "../../core/node/health_monitor.ts";
import { FakeClock } from "../fakes/clock.ts";

const log = getLogger(["vkubelet", "test", "metrics"]);

/** A health monitor over a provider whose ping fails while `failure` is set. */
function health() {
  const clock = new FakeClock();
  const state: { failure?: string } = {};
  const monitor = new HealthMonitor({
    clock,
    log,
    provider: {
      ping: () => state.failure ? Promise.reject(new Error(state.failure)) : Promise.resolve(),
    },
  });
  return { monitor, clock, state };
}

const pod = (name: string, phase?: string): Pod => ({
  metadata: { name, namespace: "default" },
  status: phase ? { phase } : {},
});

Deno.test("/metrics serves the registry the controllers update, with pods by phase", async () => {
  const metrics = new VkubeletMetrics();
  const pods = [pod("a", "Running"), pod("b", "Running"), pod("c", "Failed"), pod("d")];
  observePodController(metrics, { pods: () => pods, queueLengths: { sync: 3, status: 1 } });
  metrics.kubeletApiRequests.inc({ route: "/pods", method: "GET", code: "200" });
  const handle = metricsHandler({ metrics, health: health().monitor });
  const response = await handle("GET", "/metrics");
  assert.equal(response.status, 200);
  assert.match(response.headers["content-type"], /^text\/plain; version=0\.0\.4/);
  const lines = response.body.split("\n");
  for (
    const line of [
      'vkubelet_pods{phase="Running"} 2',
      'vkubelet_pods{phase="Failed"} 1',
      'vkubelet_pods{phase="Pending"} 1',
      'vkubelet_pods{phase="Succeeded"} 0',
      'vkubelet_workqueue_depth{name="pods"} 3',
      'vkubelet_workqueue_depth{name="pod-status"} 1',
      'vkubelet_kubelet_api_requests_total{route="/pods",method="GET",code="200"} 1',
    ]
  ) {
    assert.ok(lines.includes(line), `missing ${line}`);
  }
  // Pods by phase are recounted at each scrape, not accumulated.
  pods.pop();
  const again = (await handle("GET", "/metrics")).body;
  assert.ok(again.includes('vkubelet_pods{phase="Pending"} 0'));
});

Deno.test("/healthz is 200 ok while the provider answers its ping, 503 with the reason when not", async () => {
  const { monitor, clock, state } = health();
  const handle = metricsHandler({ metrics: new VkubeletMetrics(), health: monitor });
  const stop = new AbortController();
  const running = monitor.run(stop.signal);
  try {
    await monitor.ready;
    let response = await handle("GET", "/healthz");
    assert.equal(response.status, 200);
    assert.equal(response.body, "ok\n");
    state.failure = "backend unreachable";
    await clock.advance(10_000);
    response = await handle("GET", "/healthz");
    assert.equal(response.status, 503);
    assert.equal(response.body, "provider ping failed: backend unreachable\n");
    state.failure = undefined;
    await clock.advance(10_000);
    assert.equal((await handle("GET", "/healthz?verbose")).status, 200);
  } finally {
    stop.abort();
    await running;
  }
});

Deno.test("the metrics listener serves nothing but /metrics and /healthz", async () => {
  const handle = metricsHandler({ metrics: new VkubeletMetrics(), health: health().monitor });
  for (const path of ["/", "/pods", "/stats/summary", "/metrics/resource", "/configz", "/exec"]) {
    assert.equal((await handle("GET", path)).status, 404, path);
  }
  const post = await handle("POST", "/metrics");
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, "GET, HEAD");
});

Deno.test("serveMetrics listens over plain HTTP until its signal aborts", async () => {
  const stop = new AbortController();
  const listener = await serveMetrics({
    address: { hostname: "127.0.0.1", port: 0 },
    metrics: new VkubeletMetrics(),
    health: health().monitor,
    log,
  }, stop.signal);
  try {
    const base = `http://127.0.0.1:${listener.addr.port}`;
    const metrics = await fetch(`${base}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(await metrics.text(), /# TYPE process_resident_memory_bytes gauge/);
    const healthz = await fetch(`${base}/healthz`);
    assert.equal(await healthz.text(), "ok\n");
    // The same port twice is a start-up error that names the option.
    await assert.rejects(
      () =>
        serveMetrics({
          address: { hostname: "127.0.0.1", port: listener.addr.port },
          metrics: new VkubeletMetrics(),
          health: health().monitor,
          log,
        }, stop.signal),
      (err) =>
        err instanceof MetricsListenError && /--metrics-addr 127\.0\.0\.1:\d+/.test(err.message),
    );
  } finally {
    stop.abort();
    await listener.done;
  }
  await assert.rejects(fetch(`http://127.0.0.1:${listener.addr.port}/healthz`));
});

Deno.test("--metrics-addr takes HOST:PORT, [IPv6]:PORT or :PORT and is off by default", async () => {
  assert.deepEqual(parseHostPort("127.0.0.1:10255"), { hostname: "127.0.0.1", port: 10255 });
  assert.deepEqual(parseHostPort(":10255"), { hostname: "0.0.0.0", port: 10255 });
  assert.deepEqual(parseHostPort("[::1]:9100"), { hostname: "::1", port: 9100 });
  assert.deepEqual(parseHostPort("localhost:9100"), { hostname: "localhost", port: 9100 });
  for (const bad of ["10255", "127.0.0.1", "127.0.0.1:99999", "a b:1", "::1:9100"]) {
    assert.equal(parseHostPort(bad), undefined, bad);
  }
  const load = (args: string[]) =>
    loadConfig({ args: ["--provider=mock", ...args], env: {}, readFile: () => Promise.reject() });
  const off = await load([]);
  assert.ok(off.ok && off.config.metricsAddr === undefined);
  const on = await load(["--metrics-addr=127.0.0.1:10255"]);
  assert.ok(on.ok && on.config.metricsAddr === "127.0.0.1:10255");
  const bad = await load(["--metrics-addr=10255"]);
  assert.ok(!bad.ok);
  assert.match(bad.errors.join("\n"), /--metrics-addr.*"10255" is not HOST:PORT/);
  const clash = await load(["--metrics-addr=:10250"]);
  assert.ok(!clash.ok);
  assert.match(clash.errors.join("\n"), /--metrics-addr.*kubelet API's port 10250/);
});

Deno.test("under --leader-elect /healthz names the role and vkubelet_leader says it", async () => {
  const metrics = new VkubeletMetrics();
  let leading = false;
  const handle = metricsHandler({
    metrics,
    health: ALWAYS_HEALTHY,
    role: () => leading ? "leader" : "standby",
  });
  metrics.leader.set(0);
  assert.equal((await handle("GET", "/healthz")).body, "ok: standby\n");
  assert.match((await handle("GET", "/metrics")).body, /^vkubelet_leader 0$/m);
  leading = true;
  metrics.leader.set(1);
  assert.equal((await handle("GET", "/healthz")).body, "ok: leader\n");
  assert.match((await handle("GET", "/metrics")).body, /^vkubelet_leader 1$/m);
});

Deno.test("a term's pod collector, once stopped, no longer reads its controller and its series go", async () => {
  const metrics = new VkubeletMetrics();
  let reads = 0;
  const stop = observePodController(metrics, {
    pods: () => (reads++, [pod("a", "Running")]),
    queueLengths: { sync: 2, status: 0 },
  });
  assert.match(await metrics.render(), /vkubelet_pods\{phase="Running"\} 1/);
  stop();
  const text = await metrics.render();
  assert.equal(reads, 1, "the ended term's controller is not read again");
  assert.doesNotMatch(text, /vkubelet_pods\{/);
  assert.doesNotMatch(text, /vkubelet_workqueue_depth\{/);
});

Deno.test("kubelet_running_pods and kubelet_running_containers count the pods' statuses as the kubelet does", async () => {
  const metrics = new VkubeletMetrics();
  const web = pod("web", "Running");
  web.status!.containerStatuses = [
    { name: "app", image: "a", imageID: "", ready: true, restartCount: 0, state: { running: {} } },
    {
      name: "sidecar",
      image: "s",
      imageID: "",
      ready: false,
      restartCount: 1,
      state: { waiting: { reason: "CrashLoopBackOff" } },
      lastState: { terminated: { exitCode: 1 } },
    },
  ];
  web.status!.initContainerStatuses = [
    {
      name: "init",
      image: "i",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 0 } },
    },
  ];
  const starting = pod("starting");
  starting.status!.containerStatuses = [
    {
      name: "app",
      image: "a",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: "ContainerCreating" } },
    },
  ];
  const pods = [web, starting];
  const stop = observePodController(metrics, {
    pods: () => pods,
    queueLengths: { sync: 0, status: 0 },
  });
  const lines = (await metrics.render()).split("\n");
  for (
    const line of [
      "kubelet_running_pods 1",
      'kubelet_running_containers{container_state="running"} 1',
      'kubelet_running_containers{container_state="exited"} 2',
      'kubelet_running_containers{container_state="created"} 0',
    ]
  ) {
    assert.ok(lines.includes(line), `missing ${line}`);
  }
  stop();
});
