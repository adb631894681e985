import assert from "node:assert/strict";
import { FakeClock, flush } from "../../fakes/clock.ts";
import { forbiddenLabels, HealthMonitor } from "../../../core/node/mod.ts";
import { apiError, recordingLogger } from "./fakes.ts";

Deno.test("a ping that hangs past its timeout counts as a failure", async () => {
  const clock = new FakeClock();
  let hang = true;
  const provider = {
    ping: ({ signal }: { signal?: AbortSignal }) =>
      hang
        ? new Promise<void>((_, reject) =>
          signal?.addEventListener("abort", () => reject(signal.reason))
        )
        : Promise.resolve(),
  };
  const { log } = recordingLogger();
  const monitor = new HealthMonitor({
    provider,
    clock,
    log,
    pingIntervalMs: 10_000,
    pingTimeoutMs: 3_000,
  });
  const changes: boolean[] = [];
  monitor.onChange((h) => changes.push(h.healthy));
  const controller = new AbortController();
  const running = monitor.run(controller.signal);
  await flush();
  assert.equal(monitor.current().healthy, true, "unhealthy before the timeout");
  await clock.advance(3_000);
  assert.equal(monitor.current().healthy, false);
  assert.match(monitor.current().message!, /3000 ms/);
  await monitor.ready;
  hang = false;
  await clock.advance(10_000);
  assert.equal(monitor.current().healthy, true);
  assert.deepEqual(changes, [false, true]);
  controller.abort();
  await running;
});

Deno.test("a provider without ping is always healthy and ready at once", async () => {
  const monitor = new HealthMonitor({
    provider: {},
    clock: new FakeClock(),
    log: recordingLogger().log,
  });
  await monitor.ready;
  await monitor.run(new AbortController().signal);
  assert.equal(monitor.current().healthy, true);
});

Deno.test("forbidden labels are read from NodeRestriction's create and update answers", () => {
  const create = apiError(
    403,
    "Forbidden",
    'nodes "vk-1" is forbidden: node "vk-1" is not allowed to set the following labels: kubernetes.io/role, node-restriction.kubernetes.io/x',
  );
  assert.deepEqual(forbiddenLabels(create), [
    "kubernetes.io/role",
    "node-restriction.kubernetes.io/x",
  ]);
  const update = apiError(
    403,
    "Forbidden",
    'nodes "vk-1" is forbidden: is not allowed to modify labels: kubernetes.io/role',
  );
  assert.deepEqual(forbiddenLabels(update), ["kubernetes.io/role"]);
  assert.deepEqual(
    forbiddenLabels(apiError(403, "Forbidden", "node is not allowed to modify taints")),
    [],
  );
  assert.deepEqual(
    forbiddenLabels(apiError(404, "NotFound", "not allowed to modify labels: a")),
    [],
  );
  assert.deepEqual(forbiddenLabels(new Error("not allowed to modify labels: a")), []);
});
