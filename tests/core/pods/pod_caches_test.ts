import assert from "node:assert/strict";
import { getLogger } from "../../../base/log.ts";
import { PodCaches } from "../../../core/pods/pod_caches.ts";
import { ConfigSources } from "../../../core/pods/config_sources.ts";
import { PodController } from "../../../core/pods/pod_controller.ts";
import { FakeClock, flush } from "../../fakes/clock.ts";
import { FakeApi } from "./_fake_api.ts";
import { FakeProvider } from "./_fake_provider.ts";
import { boundPod, NODE } from "./_harness.ts";

const log = getLogger(["vkubelet", "test"]);

/** Shared caches running on their own, as a standby runs them, and terms started on them. */
function standby() {
  const clock = new FakeClock();
  const api = new FakeApi();
  const provider = new FakeProvider({ push: true, now: () => clock.now() });
  const caches = new PodCaches({ api, clock, log, nodeName: NODE });
  const stopCaches = new AbortController();
  const cachesRunning = caches.run(stopCaches.signal);
  return {
    clock,
    api,
    provider,
    caches,
    /** Starts a term's controller on the shared caches. */
    term() {
      const controller = new PodController({ api, provider, clock, log, nodeName: NODE, caches });
      const stop = new AbortController();
      const running = controller.run(stop.signal);
      return {
        controller,
        async end() {
          stop.abort();
          await running;
        },
      };
    },
    async stop() {
      stopCaches.abort();
      await cachesRunning;
    },
  };
}

Deno.test("a controller given synced caches runs their pods without a watch or list of its own", async () => {
  const s = standby();
  s.api.pods.put(boundPod("web-0"));
  s.api.pods.put(boundPod("web-1"));
  await s.caches.synced;
  assert.equal(s.provider.ops("create").length, 0, "the standby acts on nothing");
  const term = s.term();
  await term.controller.ready;
  await flush();
  assert.deepEqual(s.provider.ops("create").sort(), ["shop/web-0", "shop/web-1"]);
  assert.equal(s.api.pods.pods.get("shop/web-0")!.status?.phase, "Running");
  assert.equal(s.api.pods.informerInstance.runs, 1, "the pod watch ran once, the standby's");
  assert.equal(s.api.serviceInformer.runs, 1, "the service watch ran once, the standby's");
  await term.end();
  assert.equal(s.api.pods.informerInstance.stopped, false, "the caches outlive the term");
  await s.stop();
});

Deno.test("a term that ended hears no more pod events; the next term picks up what changed between", async () => {
  const s = standby();
  s.api.pods.put(boundPod("web-0"));
  const first = s.term();
  await first.controller.ready;
  await flush();
  await first.end();
  s.api.pods.put(boundPod("web-1"));
  await flush();
  assert.deepEqual(first.controller.queueLengths, { sync: 0, status: 0 });
  assert.deepEqual(s.provider.ops("create"), ["shop/web-0"], "nothing acts between terms");
  const second = s.term();
  await second.controller.ready;
  await flush();
  assert.deepEqual(s.provider.ops("create"), ["shop/web-0", "shop/web-1"]);
  assert.equal(s.api.pods.pods.get("shop/web-1")!.status?.phase, "Running");
  await second.end();
  await s.stop();
});

Deno.test("shared caches watch the pods' ConfigMaps before a term starts; a change reaches the term", async () => {
  const s = standby();
  s.api.configMaps.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "1" } });
  s.api.pods.put(boundPod("web-0", {
    containers: [{
      name: "main",
      env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "cfg", key: "a" } } }],
    }],
  }));
  await s.caches.synced;
  await flush();
  assert.deepEqual(s.api.configMaps.watching, ["shop/cfg"], "watched while standing by");
  const term = s.term();
  await term.controller.ready;
  await flush();
  assert.equal(s.api.configMaps.gets, 0, "env resolved from the warm watch, no GET");
  assert.deepEqual(s.provider.pods.get("shop/web-0")!.spec!.containers[0].env, [
    { name: "A", value: "1" },
  ]);
  s.api.configMaps.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "2" } });
  await flush();
  assert.deepEqual(s.provider.pods.get("shop/web-0")!.spec!.containers[0].env, [
    { name: "A", value: "2" },
  ]);
  await term.end();
  assert.deepEqual(s.api.configMaps.watching, ["shop/cfg"], "still watched after the term");
  await s.api.pods.delete("shop", "web-0");
  await flush();
  assert.deepEqual(s.api.configMaps.watching, [], "let go when the pod goes");
  await s.stop();
});

Deno.test("without injected caches the controller lists and watches on its own, and stops them", async () => {
  const clock = new FakeClock();
  const api = new FakeApi();
  const provider = new FakeProvider({ push: true, now: () => clock.now() });
  const controller = new PodController({ api, provider, clock, log, nodeName: NODE });
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  api.pods.put(boundPod("web-0"));
  await controller.ready;
  await flush();
  assert.deepEqual(provider.ops("create"), ["shop/web-0"]);
  assert.equal(api.pods.informerInstance.runs, 1);
  stop.abort();
  await running;
  assert.equal(api.pods.informerInstance.stopped, true, "its own watch stops with it");
  assert.equal(api.serviceInformer.stopped, true);
});

Deno.test("nodes sharing ConfigMap watches hold one watch per object, and a change reaches each node's pod", async () => {
  const clock = new FakeClock();
  const objects = new FakeApi();
  objects.configMaps.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "1" } });
  const shared = new ConfigSources({ api: objects, clock, log });
  const stop = new AbortController();
  const sharedRunning = shared.run(stop.signal);
  const nodes = ["web-0", "web-1"].map((name) => {
    const api = new FakeApi();
    const provider = new FakeProvider({ push: true, now: () => clock.now() });
    const controller = new PodController({
      api,
      provider,
      clock,
      log,
      nodeName: NODE,
      configSources: shared,
    });
    return { name, api, provider, controller, running: controller.run(stop.signal) };
  });
  for (const n of nodes) {
    n.api.pods.put(boundPod(n.name, {
      containers: [{
        name: "main",
        env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "cfg", key: "a" } } }],
      }],
    }));
  }
  try {
    await Promise.all(nodes.map((n) => n.controller.ready));
    await flush();
    const env = (n: (typeof nodes)[number]) =>
      n.provider.pods.get(`shop/${n.name}`)?.spec?.containers[0].env;
    for (const n of nodes) assert.deepEqual(env(n), [{ name: "A", value: "1" }], n.name);
    assert.deepEqual(objects.configMaps.watching, ["shop/cfg"], "one watch for both nodes");
    for (const n of nodes) assert.deepEqual(n.api.configMaps.watching, [], "none of their own");
    objects.configMaps.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "2" } });
    await flush();
    for (const n of nodes) assert.deepEqual(env(n), [{ name: "A", value: "2" }], n.name);
    await nodes[0].api.pods.delete("shop", "web-0");
    await flush();
    assert.deepEqual(objects.configMaps.watching, ["shop/cfg"], "still used by the other node");
    await nodes[1].api.pods.delete("shop", "web-1");
    await flush();
    assert.deepEqual(objects.configMaps.watching, [], "let go when the last pod goes");
  } finally {
    stop.abort();
    await Promise.all([sharedRunning, ...nodes.map((n) => n.running)]);
  }
});
