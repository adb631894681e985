/**
 * Node Ready follows the ping: the core's node side (health monitor, node controller) on a fake
 * API, with the provider (`target: plugin`) against the reference plugin. The plugin killed: Ready
 * turns False, its message saying the plugin does not answer the ping; started again: True.
 */
import assert from "node:assert/strict";
import type { NodeCondition } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { createNodeSide, HealthMonitor, PING_FAILED_REASON } from "../../../core/node/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { FakeNodeApi } from "../../core/node/fakes.ts";
import { captureLogs, until } from "./_logs.ts";
import { startPlugin } from "./_plugin.ts";

Deno.test("the node goes NotReady while the plugin does not answer its ping, and Ready again", async () => {
  const plugin = await startPlugin();
  const stop = new AbortController();
  await captureLogs(async ({ log }) => {
    const provider = createProvider(
      { target: "plugin", url: plugin.url, pingTimeout: "1s" },
      {
        nodeName: "vk-ping",
        log,
        clock: realClock,
        internalIp: "127.0.0.1",
        daemonPort: 10250,
        signal: stop.signal,
      },
    );
    const api = new FakeNodeApi(() => Date.now());
    // The monitor's own deadline is longer than the provider's, so that the provider's error shows.
    const health = new HealthMonitor({
      provider,
      clock: realClock,
      log,
      pingIntervalMs: 100,
      pingTimeoutMs: 5_000,
    });
    const side = createNodeSide({
      nodeName: "vk-ping",
      os: "linux",
      nodeLabels: {},
      disableTaint: false,
      taintKey: "virtual-kubelet.io/provider",
      taintValue: "interlink",
      taintEffect: "NoSchedule",
      nodeLeaseDurationSeconds: 40,
      nodeLeaseRenewInterval: 10_000,
      nodeStatusUpdateFrequency: 1_000,
      nodeStatusReportFrequency: 60_000,
      recreateNode: true,
      cordonOnShutdown: false,
      port: 10250,
    }, { api, provider, clock: realClock, log, internalIp: "127.0.0.1", version: "0.0.0", health });
    const ready = (): NodeCondition | undefined =>
      api.node?.status?.conditions?.find((c) => c.type === "Ready");
    const running = Promise.all([health.run(stop.signal), side.run(stop.signal)]);
    try {
      await side.ready;
      await until("Ready True", () => ready()?.status === "True");

      await plugin.kill();
      const down = await until("Ready False", () => ready()?.status === "False" && ready());
      assert.equal(down.reason, PING_FAILED_REASON);
      assert.match(
        down.message ?? "",
        new RegExp(`${plugin.url} does not answer GET /status \\(ping\\)`),
        `the message says the plugin does not answer its ping: ${down.message}`,
      );
      assert.match(down.message ?? "", /check that interLink \(or the plugin\) runs/);

      await plugin.restart();
      const up = await until("Ready True again", () => ready()?.status === "True" && ready());
      assert.doesNotMatch(up.message ?? "", /ping/);
    } finally {
      stop.abort();
      await running;
      await provider.close();
      await plugin.stop();
    }
  });
});

Deno.test("a plugin whose ping hangs: the Ready message is the provider's, naming pingTimeout", async () => {
  // Answers nothing on /status (the plugin target's ping) until the test ends.
  const hold = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
    await hold.promise;
    return Response.json([]);
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  const stop = new AbortController();
  await captureLogs(async ({ log }) => {
    const provider = createProvider(
      { target: "plugin", url, pingTimeout: "300ms" },
      {
        nodeName: "vk-ping-hang",
        log,
        clock: realClock,
        internalIp: "127.0.0.1",
        daemonPort: 10250,
        signal: stop.signal,
      },
    );
    // The monitor's default deadline (10 s): the provider's own must come first.
    const health = new HealthMonitor({ provider, clock: realClock, log, pingIntervalMs: 10_000 });
    const running = health.run(stop.signal);
    try {
      const down = await until("an unhealthy ping", () => {
        const h = health.current();
        return !h.healthy && h;
      });
      assert.match(
        down.message ?? "",
        new RegExp(`${url} does not answer GET /status \\(ping\\) within 300 ms`),
      );
      assert.match(down.message ?? "", /raise pingTimeout in the provider config/);
    } finally {
      stop.abort();
      hold.resolve();
      await running;
      await provider.close();
      await server.shutdown();
    }
  });
});
