import assert from "node:assert/strict";
import { FakeClock } from "../../fakes/clock.ts";
import { cleanup, makePod, startProvider, waitFor } from "./_helpers.ts";
import { freePort } from "../../../tools/cluster/ports.ts";

Deno.test("a readiness probe on an HTTP server makes the pod Ready", async () => {
  const t = await startProvider();
  const port = freePort();
  const pod = makePod([{
    name: "web",
    image: "python",
    command: ["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"],
    readinessProbe: { httpGet: { path: "/", port }, periodSeconds: 1 },
  }]);
  try {
    await t.provider.createPod(pod, {});
    const ready = await waitFor("Ready", async () => {
      const p = await t.provider.getPod("default", pod.metadata!.name!, {});
      return p?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" && p;
    }, 20_000);
    assert.equal(ready.status!.containerStatuses![0].ready, true);
    assert.equal(ready.status!.phase, "Running");
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("a failing liveness probe restarts the container and counts the restart", async () => {
  const clock = new FakeClock(Date.now());
  const t = await startProvider({ clock });
  const pod = makePod([{
    name: "app",
    image: "x",
    command: ["sh", "-c", "touch healthy; exec sleep 60"],
    livenessProbe: {
      exec: { command: ["sh", "-c", "test -f healthy && rm healthy"] },
      periodSeconds: 5,
      failureThreshold: 1,
    },
  }]);
  const status = async () =>
    (await t.provider.getPod("default", pod.metadata!.name!, {}))?.status?.containerStatuses?.[0];
  try {
    await t.provider.createPod(pod, {});
    await waitFor("running", async () => (await status())?.state?.running);
    // First probe passes (and removes the file); the next one, a period later, fails.
    const work = t.provider.runnerOf("default", pod.metadata!.name!)!.paths.work;
    await waitFor("first probe passed", () => {
      try {
        Deno.statSync(`${work}/healthy`);
        return false;
      } catch {
        return true;
      }
    });
    assert.equal((await status())?.restartCount, 0);
    // A probe period at a time until the kill is counted: the probe is a real `sh`, which on a
    // loaded machine can take longer than one short real-time wait.
    await waitFor("liveness kill", async () => {
      if ((await status())?.restartCount !== 0) return true;
      await clock.advance(5_000);
      await new Promise((r) => setTimeout(r, 300));
    }, 30_000);
    const restarted = await waitFor("restart", async () => {
      const s = await status();
      return s?.restartCount === 1 && s.state?.running && s;
    }, 20_000);
    assert.match(restarted.lastState!.terminated!.message!, /Liveness probe failed/);
    assert.equal(restarted.lastState!.terminated!.exitCode, 143);
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});

Deno.test("probes to a non-loopback host are refused at creation", async () => {
  const t = await startProvider();
  try {
    const pod = makePod([{
      name: "app",
      image: "x",
      command: ["sleep", "1"],
      livenessProbe: { tcpSocket: { host: "10.0.0.1", port: 80 } },
    }]);
    await assert.rejects(() => t.provider.createPod(pod, {}), /not a loopback address/);
  } finally {
    await t.close();
  }
});

Deno.test("stop sends SIGTERM to the group, then SIGKILL after the grace period", async () => {
  const clock = new FakeClock(Date.now());
  const t = await startProvider({ clock });
  const pod = makePod([{
    name: "stubborn",
    image: "x",
    command: ["sh", "-c", "trap 'echo got TERM' TERM; sleep 30 & while :; do wait; done"],
  }], { terminationGracePeriodSeconds: 30 });
  try {
    await t.provider.createPod(pod, {});
    const name = pod.metadata!.name!;
    const pid = await waitFor(
      "running",
      () => t.provider.runnerOf("default", name)?.live("stubborn")?.instance.record.pid,
    );
    await new Promise((r) => setTimeout(r, 200));
    const deleting = t.provider.deletePod(pod, {});
    await waitFor("TERM handled", async () => {
      const logs = await t.provider.getContainerLogs({
        namespace: "default",
        pod: name,
        container: "stubborn",
      }, {}).catch(() => undefined);
      return logs && (await new Response(logs).text()).includes("got TERM");
    });
    assert.ok(Deno.statSync(`/proc/${pid}`), "still running after SIGTERM");
    await clock.advance(30_000);
    await deleting;
    assert.throws(() => Deno.statSync(`/proc/${pid}`));
  } finally {
    await cleanup(t.provider, pod);
    await t.close();
  }
});
