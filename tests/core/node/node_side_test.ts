import assert from "node:assert/strict";
import { FakeClock, flush } from "../../fakes/clock.ts";
import {
  createNodeSide,
  type Health,
  type HealthSource,
  type NodeSideConfig,
} from "../../../core/node/mod.ts";
import { FakeNodeApi, FakeNodeProvider, recordingLogger } from "./fakes.ts";

const config: NodeSideConfig = {
  nodeName: "vk-config",
  os: "linux",
  nodeLabels: { "example.com/pool": "gpu" },
  disableTaint: false,
  taintKey: "example.com/virtual",
  taintValue: "mock",
  taintEffect: "PreferNoSchedule",
  nodeLeaseDurationSeconds: 20,
  nodeLeaseRenewInterval: 5_000,
  nodeStatusUpdateFrequency: 10_000,
  nodeStatusReportFrequency: 60_000,
  recreateNode: true,
  cordonOnShutdown: false,
  port: 11250,
};

Deno.test("the node side built from config carries the config's labels, taint, port and lease timing", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const side = createNodeSide(config, {
    api,
    provider: new FakeNodeProvider(),
    clock,
    log: recordingLogger().log,
    internalIp: "10.1.2.3",
    version: "9.9.9",
  });
  const controller = new AbortController();
  const running = side.run(controller.signal);
  await side.ready;
  await flush();
  const node = api.node!;
  assert.equal(node.metadata?.labels?.["example.com/pool"], "gpu");
  assert.deepEqual(node.spec?.taints, [
    { key: "example.com/virtual", value: "mock", effect: "PreferNoSchedule" },
  ]);
  assert.equal(node.status?.daemonEndpoints?.kubeletEndpoint?.Port, 11250);
  assert.equal(node.status?.nodeInfo?.kubeletVersion, "v1.37.2-vkubelet-9.9.9");
  assert.equal(node.status?.addresses?.[0].address, "10.1.2.3");
  assert.equal(api.lease?.spec?.leaseDurationSeconds, 20);
  const renewals = api.count("updateLease");
  await clock.advance(5_200);
  assert.equal(api.count("updateLease"), renewals + 1);
  controller.abort();
  await running;
});

Deno.test("disableTaint registers the node without a taint", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const side = createNodeSide({ ...config, disableTaint: true }, {
    api,
    provider: new FakeNodeProvider(),
    clock,
    log: recordingLogger().log,
    internalIp: "10.1.2.3",
    version: "9.9.9",
  });
  const controller = new AbortController();
  const running = side.run(controller.signal);
  await side.ready;
  controller.abort();
  await running;
  assert.deepEqual(api.node?.spec?.taints, []);
});

Deno.test("a node side given a health source registers without a ping of its own and follows that source", async () => {
  const clock = new FakeClock();
  const api = new FakeNodeApi(() => clock.now());
  const provider = new FakeNodeProvider();
  const listeners = new Set<(h: Health) => void>();
  let healthy = true;
  const health: HealthSource = {
    current: () => healthy ? { healthy, since: 0 } : { healthy, message: "down", since: 0 },
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    ready: Promise.resolve(),
  };
  const side = createNodeSide(config, {
    api,
    provider,
    clock,
    log: recordingLogger().log,
    internalIp: "10.1.2.3",
    version: "9.9.9",
    health,
  });
  const controller = new AbortController();
  const running = side.run(controller.signal);
  await side.ready;
  await flush();
  assert.equal(provider.pings, 0, "the injected source has pinged already");
  assert.equal(side.health, health);
  healthy = false;
  for (const listener of listeners) listener(health.current());
  await flush();
  const ready = api.node?.status?.conditions?.find((c) => c.type === "Ready");
  assert.equal(ready?.status, "False", "Ready follows the injected source");
  controller.abort();
  await running;
  assert.equal(listeners.size, 0, "the node side lets go of the source when it stops");
});
