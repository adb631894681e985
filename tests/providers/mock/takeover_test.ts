/**
 * The mock under `--leader-elect`: a new leader's mock that is handed a Running pod another
 * replica's mock ran keeps its IP, start times and restart counts (providers/mock/written_starts.ts).
 * @module
 */
import assert from "node:assert/strict";
import { mockProvider, samplePod } from "./_setup.ts";

Deno.test("a Running pod from another replica keeps its IP, start times and restart count", async () => {
  const { provider, options } = mockProvider();
  const pod = {
    ...samplePod("web"),
    status: {
      phase: "Running",
      podIP: "127.80.3.7",
      startTime: "2025-12-31T23:00:00Z",
      containerStatuses: [{
        name: "app",
        image: "nginx:1.27",
        imageID: "",
        ready: true,
        restartCount: 2,
        state: { running: { startedAt: "2025-12-31T23:30:00Z" } },
      }],
    },
  };
  await provider.createPod(pod, options);
  const status = (await provider.getPod("default", "web", options))!.status!;
  assert.equal(status.podIP, "127.80.3.7");
  assert.equal(status.startTime, "2025-12-31T23:00:00Z");
  const [app] = status.containerStatuses!;
  assert.equal(app.restartCount, 2);
  assert.equal(app.state?.running?.startedAt, "2025-12-31T23:30:00Z");

  // A new pod, or one whose IP is taken, gets a fresh address and starts now.
  await provider.createPod(
    { ...pod, metadata: { ...pod.metadata, name: "twin", uid: "u2" } },
    options,
  );
  const twin = (await provider.getPod("default", "twin", options))!.status!;
  assert.notEqual(twin.podIP, "127.80.3.7");
  await provider.createPod(samplePod("fresh"), options);
  const fresh = (await provider.getPod("default", "fresh", options))!.status!;
  assert.equal(fresh.containerStatuses![0].restartCount, 0);
  assert.equal(fresh.containerStatuses![0].state?.running?.startedAt, "2026-01-01T00:00:00Z");
  await provider.close();
});

Deno.test("resume holds the IPs of running pods: a pod bound during the takeover and created first gets another", async () => {
  const { provider, options } = mockProvider();
  // A pod another replica's mock ran, holding the address a fresh mock hands out first.
  const first = "127.80.0.1";
  const running = {
    ...samplePod("web"),
    metadata: { ...samplePod("web").metadata, uid: "u-web" },
    status: { phase: "Running", podIP: first },
  };
  provider.resume([running]);
  const late = samplePod("late");
  await provider.createPod({ ...late, metadata: { ...late.metadata, uid: "u-late" } }, options);
  assert.notEqual((await provider.getPod("default", "late", options))!.status!.podIP, first);
  await provider.createPod(running, options);
  assert.equal((await provider.getPod("default", "web", options))!.status!.podIP, first);
  await provider.close();
});

Deno.test("standby lets go of the IPs held for pods that were never created", async () => {
  const { provider, options } = mockProvider();
  const running = {
    ...samplePod("web"),
    metadata: { ...samplePod("web").metadata, uid: "u-web" },
    status: { phase: "Running", podIP: "127.80.0.9" },
  };
  provider.resume([running]);
  provider.standby();
  await provider.createPod(
    { ...samplePod("other"), status: { phase: "Running", podIP: "127.80.0.9" } },
    options,
  );
  assert.equal((await provider.getPod("default", "other", options))!.status!.podIP, "127.80.0.9");
  await provider.close();
});
