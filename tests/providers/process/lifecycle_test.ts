import assert from "node:assert/strict";
import { FakeClock } from "../../fakes/clock.ts";
import { cleanup, makePod, readAll, startProvider, waitFor, within } from "./_helpers.ts";

Deno.test("a Job-like pod printing hello world succeeds and keeps its log", async () => {
  const t = await startProvider();
  const pod = makePod([{
    name: "main",
    image: "busybox",
    command: ["sh", "-c", "echo hello world"],
  }], {
    restartPolicy: "Never",
  });
  try {
    await t.provider.createPod(pod, {});
    const done = await waitFor("Succeeded", async () => {
      const p = await t.provider.getPod("default", pod.metadata!.name!, {});
      return p?.status?.phase === "Succeeded" && p;
    });
    const state = done.status!.containerStatuses![0].state!.terminated!;
    assert.equal(state.exitCode, 0);
    assert.equal(state.reason, "Completed");
    const logs = await t.provider.getContainerLogs(
      { namespace: "default", pod: pod.metadata!.name!, container: "main" },
      {},
    );
    assert.equal(await readAll(logs), "hello world\n");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("init containers run in order before the containers", async () => {
  const t = await startProvider();
  const pod = makePod([{ name: "main", image: "x", command: ["sh", "-c", "cat order"] }], {
    restartPolicy: "Never",
    initContainers: [
      { name: "one", image: "x", command: ["sh", "-c", "echo one >> order"] },
      { name: "two", image: "x", command: ["sh", "-c", "echo two >> order"] },
    ],
  });
  try {
    await t.provider.createPod(pod, {});
    await waitFor(
      "Succeeded",
      async () =>
        (await t.provider.getPod("default", pod.metadata!.name!, {}))?.status?.phase ===
          "Succeeded",
    );
    const logs = await t.provider.getContainerLogs(
      { namespace: "default", pod: pod.metadata!.name!, container: "main" },
      {},
    );
    assert.equal(await readAll(logs), "one\ntwo\n");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("a container without command or mapped image is refused with the fix", async () => {
  const t = await startProvider();
  try {
    await assert.rejects(
      () => t.provider.createPod(makePod([{ name: "web", image: "nginx:1.27" }]), {}),
      /cannot pull images.*imageCommands/,
    );
  } finally {
    await t.close();
  }
});

Deno.test("crashing containers restart with the kubelet's back-off", async () => {
  const clock = new FakeClock(Date.now());
  const t = await startProvider({ clock });
  const pod = makePod([{ name: "crash", image: "x", command: ["sh", "-c", "echo boom; exit 3"] }]);
  const ref = () => t.provider.getPod("default", pod.metadata!.name!, {});
  const status = async () => (await ref())?.status?.containerStatuses?.[0];
  try {
    await t.provider.createPod(pod, {});
    // The first restart is immediate, then the container waits 10 s.
    const backoff = await waitFor("CrashLoopBackOff", async () => {
      const s = await status();
      return s?.state?.waiting?.reason === "CrashLoopBackOff" && s;
    });
    assert.equal(backoff.restartCount, 1);
    assert.match(backoff.state!.waiting!.message!, /back-off 10s/);
    assert.equal(backoff.lastState?.terminated?.exitCode, 3);
    assert.equal(backoff.lastState?.terminated?.reason, "Error");
    // Advance only once the pod's loop sleeps on the clock, or the time would pass before it.
    const asleep = () => waitFor("the pod's loop to sleep", () => clock.pending > 0);
    await asleep();
    await clock.advance(9_000);
    assert.equal((await status())?.restartCount, 1);
    await asleep();
    await clock.advance(1_000);
    const second = await waitFor("second back-off", async () => {
      const s = await status();
      return s?.restartCount === 2 && s.state?.waiting?.reason === "CrashLoopBackOff" && s;
    });
    assert.match(second.state!.waiting!.message!, /back-off 20s/);
    assert.equal((await ref())?.status?.phase, "Running");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("a Job-like pod with a sidecar stops the sidecar when done and succeeds", async () => {
  const t = await startProvider();
  const pod = makePod([{ name: "main", image: "x", command: ["sh", "-c", "sleep 0.2"] }], {
    restartPolicy: "Never",
    initContainers: [
      { name: "proxy", image: "x", command: ["sleep", "60"], restartPolicy: "Always" },
    ],
  });
  try {
    await t.provider.createPod(pod, {});
    const done = await waitFor("Succeeded", async () => {
      const p = await t.provider.getPod("default", pod.metadata!.name!, {});
      return p?.status?.phase === "Succeeded" && p;
    });
    assert.equal(done.status!.containerStatuses![0].state?.terminated?.exitCode, 0);
    const [proxy] = done.status!.initContainerStatuses!;
    assert.ok(proxy.state?.terminated, "the sidecar was stopped");
    assert.equal(proxy.restartCount, 0, "and not restarted");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("a pod deleted while its container is starting is stopped, not left running", async () => {
  // The runner's loop used to lose the wake-up delete sent while it was starting a container:
  // delete then waited for the next timer (a minute away) and left that process running.
  const clock = new FakeClock(Date.now());
  const t = await startProvider({ clock });
  const pod = makePod([{ name: "main", image: "x", command: ["sh", "-c", "exec sleep 3600"] }]);
  const name = pod.metadata!.name!;
  try {
    await t.provider.createPod(pod, {});
    const deleting = { ...pod, metadata: { ...pod.metadata, deletionGracePeriodSeconds: 1 } };
    await within("deletePod just after createPod", t.provider.deletePod(deleting, {}), 5_000);
    assert.equal(await t.provider.getPod("default", name, {}), undefined);
    const stray = await new Deno.Command("pgrep", { args: ["-f", `pods/default_${name}_`] })
      .output();
    assert.equal(new TextDecoder().decode(stray.stdout), "", "a process of the pod still runs");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});
