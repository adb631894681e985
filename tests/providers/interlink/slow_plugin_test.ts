/**
 * A plugin slower than `requestTimeout` (a Deno HTTP server on 127.0.0.1 that delays its
 * answers): the call is aborted with an error and an event that name the endpoint, the call, the
 * timeout and the fix; a create the plugin carries out after vkubelet gave up is adopted, not
 * made twice; while `/status` times out the poll backs off and no pod is taken for lost; a log
 * body that stalls after its first line fails the read instead of holding `kubectl logs` open.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { FakeClock } from "../../../base/fake_clock.ts";
import { isTransient } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { captureLogs, eventsKube, until } from "./_logs.ts";

const DELAY_MS = 1_500;

/** A plugin that holds pods in memory and answers late while told to. */
function slowPlugin() {
  const jobs = new Map<string, { name: string; namespace: string; jid: string }>();
  const state = { slowCreate: false, slowStatus: false, stallLogs: false, creates: 0 };
  const late = () => new Promise((r) => setTimeout(r, DELAY_MS));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const text = await req.text();
    if (path === "/create") {
      state.creates++;
      if (state.slowCreate) await late();
      const pod = JSON.parse(text).pod as Pod;
      const uid = pod.metadata!.uid!;
      if (!jobs.has(uid)) {
        jobs.set(uid, {
          name: pod.metadata!.name!,
          namespace: pod.metadata!.namespace!,
          jid: `job-${jobs.size + 1}`,
        });
      }
      return Response.json({ PodUID: uid, PodJID: jobs.get(uid)!.jid });
    }
    if (path === "/status") {
      if (state.slowStatus) await late();
      // Deno.serve drops GET bodies: every pod, which the provider filters by UID.
      return Response.json([...jobs].map(([UID, j]) => ({
        UID,
        name: j.name,
        namespace: j.namespace,
        JID: j.jid,
        containers: [{
          name: "main",
          image: "",
          imageID: "",
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
        }],
      })));
    }
    if (path === "/getLogs" && state.stallLogs) {
      // Headers and a first line, then nothing: the body never ends.
      const line = new TextEncoder().encode("first line\n");
      return new Response(new ReadableStream({ start: (c) => c.enqueue(line) }));
    }
    return Response.json({});
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, jobs, state, server };
}

const pod: Pod = {
  metadata: { namespace: "default", name: "slow", uid: "5e0c1b2a-0000-4000-8000-000000000002" },
  spec: { containers: [{ name: "main", image: "busybox" }] },
};

Deno.test("a plugin slower than requestTimeout: clear error, no duplicate job, status polls back off", async () => {
  const plugin = slowPlugin();
  const { kube, recorder, events } = eventsKube();
  const clock = new FakeClock();
  const stop = new AbortController();
  await captureLogs(async ({ log, records, text }) => {
    const provider = createProvider({
      target: "plugin",
      url: plugin.url,
      requestTimeout: "300ms",
      statusInterval: "1s",
    }, {
      nodeName: "vk-slow",
      log,
      clock,
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: stop.signal,
      kube,
      events: recorder,
    });
    try {
      plugin.state.slowCreate = true;
      const err = await provider.createPod(structuredClone(pod), {}).catch((e) => e);
      assert.ok(isTransient(err), "a timed-out create is retried by the pod controller");
      assert.match(err.message, new RegExp(`${plugin.url} does not answer POST /create`));
      assert.match(err.message, /within 300 ms; .*raise requestTimeout in the provider config/);
      const event = events.find((e) => e.reason === "InterlinkCreateFailed");
      assert.equal(event?.message, err.message, "the pod's event says the same");

      // The plugin carries the create out after vkubelet gave up; the retry adopts that job.
      await until("the late create", () => plugin.jobs.size === 1);
      plugin.state.slowCreate = false;
      await provider.createPod(structuredClone(pod), {});
      assert.equal(plugin.state.creates, 1, "the retried create did not submit a second job");
      const adopted = await provider.getPod("default", "slow", {});
      assert.equal(adopted?.status?.phase, "Running");

      plugin.state.slowStatus = true;
      const backoff = () =>
        records.filter((r) => String(r.message[0]).startsWith("status poll failed"))
          .map((r) => r.properties.next);
      await until("four failed status polls", async () => {
        await clock.advance(8_000);
        return backoff().length >= 4;
      });
      assert.deepEqual(backoff().slice(0, 4), [2_000, 4_000, 8_000, 8_000]);
      const failed = records.find((r) => String(r.message[0]).startsWith("status poll failed"))!;
      assert.match(text(failed), /does not answer GET \/status .*within 300 ms/);
      const during = await provider.getPod("default", "slow", {});
      assert.equal(during?.status?.phase, "Running", "a poll that times out loses no pod");
      assert.ok(!events.some((e) => e.reason === "InterlinkPodLost"));

      plugin.state.slowStatus = false;
      await until("a status poll that answers", async () => {
        await clock.advance(8_000);
        return records.some((r) => String(r.message[0]).startsWith("status poll answers again"));
      });
      assert.equal(plugin.jobs.size, 1);
      assert.equal(plugin.state.creates, 1);
    } finally {
      stop.abort();
      await provider.close();
      await plugin.server.shutdown();
    }
  });
});

Deno.test("a plugin that stalls mid-log: the read fails within requestTimeout, naming the call", async () => {
  const plugin = slowPlugin();
  const stop = new AbortController();
  await captureLogs(async ({ log }) => {
    const provider = createProvider({
      target: "plugin",
      url: plugin.url,
      requestTimeout: "300ms",
    }, {
      nodeName: "vk-stall",
      log,
      clock: new FakeClock(),
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: stop.signal,
      events: eventsKube().recorder,
    });
    try {
      await provider.createPod(structuredClone(pod), {});
      plugin.state.stallLogs = true;
      const ref = { namespace: "default", pod: "slow", container: "main" };
      const read = provider.getContainerLogs(ref, {}).then(
        async (stream) => await new Response(stream).text(),
      );
      let timer: ReturnType<typeof setTimeout> | undefined;
      const hung = new Promise<string>((r) => timer = setTimeout(() => r("hung"), 5_000));
      const err = await Promise.race([read, hung]).catch((e) => e).finally(() =>
        clearTimeout(timer)
      );
      assert.ok(err instanceof Error, `the read ended with ${err}, not an error`);
      assert.match(
        err.message,
        new RegExp(
          `${plugin.url} does not answer GET /getLogs \\(logs of default/slow/main\\) within 300 ms`,
        ),
      );
    } finally {
      stop.abort();
      await provider.close();
      await plugin.server.shutdown();
    }
  });
});
