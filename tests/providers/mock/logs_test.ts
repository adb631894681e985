import assert from "node:assert/strict";
import { isInvalidInput, isNotFound } from "../../../provider/mod.ts";
import { flush } from "../../fakes/clock.ts";
import { mockProvider, samplePod, text } from "./_setup.ts";

const ref = { namespace: "default", pod: "web", container: "app" };

Deno.test("logs are a few deterministic lines per container", async () => {
  const { provider, options } = mockProvider();
  await provider.createPod(samplePod(), options);
  const log = await text(await provider.getContainerLogs(ref, options));
  assert.equal(
    log,
    "mock: container app of pod default/web started (image nginx:1.27, restart 0)\n" +
      'mock: command ["nginx"]\n' +
      "mock: container app is running\n",
  );
});

Deno.test("tailLines, limitBytes and timestamps shape the log", async () => {
  const { provider, options, clock } = mockProvider();
  await provider.createPod(samplePod(), options);
  await clock.advance(2000);
  const tail = await text(await provider.getContainerLogs(ref, { ...options, tailLines: 2 }));
  assert.equal(tail, "mock: tick 1\nmock: tick 2\n");
  const limited = await text(await provider.getContainerLogs(ref, { ...options, limitBytes: 10 }));
  assert.equal(limited, "mock: cont");
  const stamped = await text(
    await provider.getContainerLogs(ref, { ...options, tailLines: 1, timestamps: true }),
  );
  assert.equal(stamped, "2026-01-01T00:00:02.000000000Z mock: tick 2\n");
  const recent = await text(await provider.getContainerLogs(ref, { ...options, sinceSeconds: 1 }));
  assert.equal(recent, "mock: tick 1\nmock: tick 2\n");
});

Deno.test("without follow the log is what it was when asked: a line written before the read is not sent", async () => {
  const { provider, options, clock } = mockProvider();
  await provider.createPod(samplePod(), options);
  await clock.advance(2000);
  const stream = await provider.getContainerLogs(ref, { ...options, tailLines: 1 });
  await clock.advance(1000); // tick 3 is written before the first read (a loaded machine)
  assert.equal(await text(stream), "mock: tick 2\n");
});

Deno.test("follow emits a line per interval until the signal aborts", async () => {
  const { provider, options, clock } = mockProvider();
  await provider.createPod(samplePod(), options);
  const stop = new AbortController();
  const stream = await provider.getContainerLogs(ref, {
    signal: stop.signal,
    follow: true,
    tailLines: 0,
  });
  const reading = text(stream);
  await flush();
  await clock.advance(1000);
  await clock.advance(1000);
  stop.abort();
  assert.equal(await reading, "mock: tick 1\nmock: tick 2\n");
});

Deno.test("a follow stream ends when the pod is deleted", async () => {
  const { provider, options, clock } = mockProvider();
  await provider.createPod(samplePod(), options);
  const reading = text(
    await provider.getContainerLogs(ref, { ...options, follow: true, tailLines: 0 }),
  );
  await flush();
  await clock.advance(1000);
  await provider.deletePod(samplePod(), options);
  assert.equal(await reading, "mock: tick 1\n");
});

Deno.test("previous logs exist only after a restart; unknown containers are not found", async () => {
  const { provider, options } = mockProvider();
  const pod = samplePod();
  await provider.createPod(pod, options);
  const none = await provider.getContainerLogs(ref, { ...options, previous: true }).catch((e) => e);
  assert.ok(isInvalidInput(none));
  const updated = structuredClone(pod);
  updated.spec!.containers[0].image = "nginx:1.28";
  await provider.updatePod(updated, options);
  const previous = await text(await provider.getContainerLogs(ref, { ...options, previous: true }));
  assert.match(previous, /restart 0\)\n/);
  const missing = await provider.getContainerLogs({ ...ref, container: "nope" }, options).catch((
    e,
  ) => e);
  assert.ok(isNotFound(missing));
});
