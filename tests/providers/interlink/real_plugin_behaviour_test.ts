/**
 * The interlink provider against a plugin that answers as the real SLURM plugin does
 * (interlink-hq/interlink-slurm-plugin f8451d93, pkg/slurm/): an in-memory plugin on 127.0.0.1
 * whose answers a test scripts — empty states for a pod it has no job for, answers that leave
 * pods out, no init-container states, an empty 200 body for a create it cannot make, late creates,
 * logs with or without time stamps. The provider runs on a fake clock.
 */
import assert from "node:assert/strict";
import http from "node:http";
import { Buffer } from "node:buffer";
import type { ContainerStatus, Pod } from "kubernetes-types/core/v1.d.ts";
import { FakeClock } from "../../../base/fake_clock.ts";
import { isInvalidInput, isTransient } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { captureLogs, eventsKube, until } from "./_logs.ts";

interface Job {
  pod: Pod;
  jid: string;
  states: ContainerStatus[];
}

/** One call as the plugin received it. */
interface Call {
  path: string;
  body: unknown;
}

/** A scripted SLURM-like plugin; see the module doc. */
async function slurmLikePlugin() {
  const jobs = new Map<string, Job>();
  const calls: Call[] = [];
  const script = {
    /** Answer /create with an empty 200 body. */
    emptyCreate: false,
    /** Make the job, then answer /create after this many ms. */
    createDelayMs: 0,
    /** UIDs left out of /status answers (a stale cache). */
    leftOut: new Set<string>(),
    /** Log lines of every container, `[stamp, text]`; stamps sent only if `stamped`. */
    log: [] as [string, string][],
    stamped: true,
  };
  const running = (c: { name: string }): ContainerStatus => ({
    name: c.name,
    image: "",
    imageID: "",
    ready: true,
    restartCount: 0,
    state: { running: { startedAt: "2026-01-01T00:00:05Z" } },
  });
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const text = Buffer.concat(chunks).toString("utf8");
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const body = text ? JSON.parse(text) : undefined;
    calls.push({ path, body });
    const send = (status: number, answer: string) => {
      res.writeHead(status);
      res.end(answer);
    };
    if (path === "/create") {
      if (script.emptyCreate) return send(200, "");
      const pod = (body as { pod: Pod }).pod;
      const uid = pod.metadata!.uid!;
      const jid = String(1000 + calls.filter((c) => c.path === "/create").length);
      jobs.set(uid, { pod, jid, states: pod.spec!.containers.map(running) });
      if (script.createDelayMs) await new Promise((r) => setTimeout(r, script.createDelayMs));
      return send(200, JSON.stringify({ PodUID: uid, PodJID: jid }));
    }
    if (path === "/delete") {
      jobs.delete((body as Pod).metadata!.uid!);
      return send(200, "");
    }
    if (path === "/status") {
      const pods = (body ?? []) as Pod[];
      // Status.go:471-477: a pod without a job gets empty states and no JID; no entry carries
      // a JID or init containers (Status.go builds PodStatus from pod.Spec.Containers).
      const answer = pods.filter((p) => !script.leftOut.has(p.metadata!.uid!)).map((p) => ({
        name: p.metadata!.name,
        UID: p.metadata!.uid,
        namespace: p.metadata!.namespace,
        JID: "",
        initContainers: null,
        containers: jobs.get(p.metadata!.uid!)?.states ??
          p.spec!.containers.map((c) => ({ name: c.name, state: {}, ready: false })),
      }));
      return send(200, JSON.stringify(answer));
    }
    if (path === "/getLogs") {
      const opts = (body as { Opts: { SinceTime: string; Timestamps: boolean } }).Opts;
      const since = opts.SinceTime.startsWith("0001-") ? "" : opts.SinceTime;
      const lines = script.log.filter(([stamp]) => !since || stamp >= since).map((
        [stamp, line],
      ) => script.stamped && opts.Timestamps ? `${stamp} ${line}\n` : `${line}\n`);
      return send(200, lines.join(""));
    }
    send(404, "");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return { url, jobs, calls, script, close, running };
}

let uids = 0;
function podOf(name: string, extra: Partial<Pod["spec"]> = {}): Pod {
  return {
    metadata: {
      namespace: "default",
      name,
      uid: `5e0c1b2a-0000-4000-8000-${String(++uids).padStart(12, "0")}`,
    },
    spec: { containers: [{ name: "main", image: "busybox" }], ...extra },
    status: { phase: "Pending" },
  };
}

/** Runs `fn` with a provider on a fake clock in front of a fresh scripted plugin. */
async function withProvider(
  config: Record<string, unknown>,
  fn: (t: {
    provider: ReturnType<typeof createProvider>;
    plugin: Awaited<ReturnType<typeof slurmLikePlugin>>;
    clock: FakeClock;
    events: { reason?: string; message?: string }[];
  }) => Promise<void>,
): Promise<void> {
  const plugin = await slurmLikePlugin();
  const { kube, recorder, events } = eventsKube();
  const clock = new FakeClock();
  const stop = new AbortController();
  await captureLogs(async ({ log }) => {
    const provider = createProvider({
      target: "plugin",
      url: plugin.url,
      statusInterval: "1s",
      requestTimeout: "500ms",
      ...config,
    }, {
      nodeName: "vk-real",
      log,
      clock,
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: stop.signal,
      kube,
      events: recorder,
    });
    try {
      await fn({ provider, plugin, clock, events });
    } finally {
      stop.abort();
      await provider.close();
      await plugin.close();
    }
  });
}

Deno.test('a pod the plugin answers with empty states is created, not adopted as job ""', async () => {
  await withProvider({}, async ({ provider, plugin }) => {
    const pod = podOf("fresh");
    await provider.createPod(structuredClone(pod), {});
    assert.equal(plugin.calls.filter((c) => c.path === "/create").length, 1, "/create was sent");
    assert.ok(plugin.jobs.has(pod.metadata!.uid!), "the plugin holds a job for the pod");
    const got = await provider.getPod("default", "fresh", {});
    assert.ok(got, "the provider follows the pod");
  });
});

Deno.test("a sighted job left out of /status is lost only after statusCacheWindow and two answers", async () => {
  await withProvider({ statusCacheWindow: "30s" }, async ({ provider, plugin, clock, events }) => {
    const pod = podOf("cached", { restartPolicy: "Never" });
    const uid = pod.metadata!.uid!;
    plugin.script.leftOut.add(uid); // left out from the start: never sighted
    await provider.createPod(structuredClone(pod), {});
    for (let i = 0; i < 8; i++) await clock.advance(10_000);
    let got = await provider.getPod("default", "cached", {});
    assert.equal(got?.status?.phase, "Pending", "never lost before its first sighting");
    assert.ok(!events.some((e) => e.reason === "InterlinkPodLost"));

    plugin.script.leftOut.delete(uid);
    await until("the sighting", async () => {
      await clock.advance(1_000);
      return (await provider.getPod("default", "cached", {}))?.status?.phase === "Running";
    });
    plugin.script.leftOut.add(uid); // a stale cache: left out of the next answers
    for (let i = 0; i < 25; i++) await clock.advance(1_000);
    got = await provider.getPod("default", "cached", {});
    assert.equal(got?.status?.phase, "Running", "25 s missing is within the cache window");
    plugin.script.leftOut.delete(uid);
    await clock.advance(1_000);
    plugin.script.leftOut.add(uid); // missing again: the count starts anew
    for (let i = 0; i < 25; i++) await clock.advance(1_000);
    assert.equal((await provider.getPod("default", "cached", {}))?.status?.phase, "Running");
    await until("the pod lost", async () => {
      await clock.advance(1_000);
      return (await provider.getPod("default", "cached", {}))?.status?.phase === "Failed";
    });
    assert.ok(events.some((e) => e.reason === "InterlinkPodLost"));
  });
});

Deno.test("init containers the plugin does not report are completed once a regular one runs", async () => {
  await withProvider({}, async ({ provider, clock }) => {
    const pod = podOf("init", {
      initContainers: [{ name: "setup", image: "busybox" }, {
        name: "proxy",
        image: "busybox",
        restartPolicy: "Always",
      }],
    });
    await provider.createPod(structuredClone(pod), {});
    const got = await until("Running", async () => {
      await clock.advance(1_000);
      const p = await provider.getPod("default", "init", {});
      return p?.status?.phase === "Running" && p;
    });
    const [setup, proxy] = got.status!.initContainerStatuses!;
    assert.equal(setup.state?.terminated?.exitCode, 0);
    assert.equal(setup.state?.terminated?.reason, "Completed");
    assert.ok(proxy.state?.running, "a sidecar runs beside the regular containers");
    const initialized = got.status!.conditions!.find((c) => c.type === "Initialized");
    assert.equal(initialized?.status, "True");
  });
});

Deno.test("an empty 200 to /create fails the pod after createAttempts, naming the plugin's answer", async () => {
  await withProvider({ createAttempts: 3 }, async ({ provider, plugin, events }) => {
    plugin.script.emptyCreate = true;
    const pod = podOf("noscript");
    for (let attempt = 1; attempt <= 2; attempt++) {
      const err = await provider.createPod(structuredClone(pod), {}).catch((e) => e);
      assert.ok(!isInvalidInput(err), `attempt ${attempt} is retried`);
      assert.match(err.message, /empty body: the plugin did not make the job/);
    }
    const last = await provider.createPod(structuredClone(pod), {}).catch((e) => e);
    assert.ok(isInvalidInput(last), "the third refusal fails the pod (ProviderFailed)");
    assert.match(last.message, /refused to create the pod 3 times \(createAttempts\)/);
    assert.match(last.message, /empty body/);
    assert.equal(events.filter((e) => e.reason === "InterlinkCreateFailed").length, 3);
    assert.equal(await provider.getPod("default", "noscript", {}), undefined);
  });
});

Deno.test("a create that timed out: its late job is adopted; /create goes again only after the window, after a /delete", async () => {
  await withProvider({ statusCacheWindow: "30s" }, async ({ provider, plugin, clock }) => {
    plugin.script.createDelayMs = 1_500; // the job is made at once, the answer comes late
    const late = podOf("late");
    const err = await provider.createPod(structuredClone(late), {}).catch((e) => e);
    assert.ok(isTransient(err) && /within 500 ms/.test(err.message));
    plugin.script.createDelayMs = 0;
    await provider.createPod(structuredClone(late), {});
    assert.equal(
      plugin.calls.filter((c) => c.path === "/create").length,
      1,
      "adopted, not made twice",
    );

    // A job that does not show: no second /create within the window; then /delete, /create.
    plugin.script.createDelayMs = 1_500;
    const lost = podOf("lost");
    await provider.createPod(structuredClone(lost), {}).catch(() => {});
    plugin.jobs.delete(lost.metadata!.uid!); // the late job never shows
    plugin.script.createDelayMs = 0;
    const early = await provider.createPod(structuredClone(lost), {}).catch((e) => e);
    assert.match(early.message, /timed out; waiting \d+ ms more for its job to show/);
    await clock.advance(31_000);
    const before = plugin.calls.length;
    await provider.createPod(structuredClone(lost), {});
    // The calls for this pod: a status poll of the other one may still be under way.
    const uid = lost.metadata!.uid!;
    assert.deepEqual(
      plugin.calls.slice(before).filter((c) => JSON.stringify(c.body).includes(uid))
        .map((c) => c.path),
      ["/status", "/delete", "/create"],
    );
  });
});

Deno.test("a downwardAPI volume reaches the plugin as interLink's VK sends it: a projected map", async () => {
  await withProvider({}, async ({ provider, plugin }) => {
    const pod = podOf("downward", {
      volumes: [{
        name: "podinfo",
        downwardAPI: { items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }] },
      }],
    });
    pod.spec!.containers[0].volumeMounts = [{ name: "podinfo", mountPath: "/etc/podinfo" }];
    await provider.createPod(structuredClone(pod), {});
    const create = plugin.calls.find((c) => c.path === "/create")!.body as {
      pod: Pod;
      container: { name: string; projectedvolumemaps: { metadata: { name: string } }[] }[];
    };
    const volume = create.pod.spec!.volumes![0];
    assert.equal(volume.downwardAPI, undefined);
    assert.deepEqual(volume.projected?.sources, [{
      downwardAPI: { items: [{ path: "name", fieldRef: { fieldPath: "metadata.name" } }] },
    }]);
    const map = create.container[0].projectedvolumemaps[0] as unknown as {
      metadata: { name: string };
      data: Record<string, string>;
    };
    assert.equal(map.metadata.name, "podinfo");
    assert.deepEqual(map.data, { name: "downward" });
  });
});

Deno.test("logs: a read asks for at most maxResponseBytes; a follow asks only since the last line shown", async () => {
  await withProvider({ maxResponseBytes: "64Ki" }, async ({ provider, plugin, clock }) => {
    await provider.createPod(structuredClone(podOf("logs")), {});
    plugin.script.log = [
      ["2026-01-01T00:00:01.000000000Z", "one"],
      ["2026-01-01T00:00:02.000000000Z", "two"],
    ];
    const ref = { namespace: "default", pod: "logs", container: "main" };
    const whole = await new Response(await provider.getContainerLogs(ref, {})).text();
    assert.equal(whole, "one\ntwo\n");
    const opts = (c: Call) => (c.body as { Opts: Record<string, unknown> }).Opts;
    const reads = () => plugin.calls.filter((c) => c.path === "/getLogs");
    assert.equal(opts(reads()[0]).Bytes, 64 * 1024 - 1, "never the whole log");

    const stop = new AbortController();
    const stream = await provider.getContainerLogs(ref, { follow: true, signal: stop.signal });
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    assert.equal((await reader.read()).value, "one\ntwo\n");
    plugin.script.log.push(["2026-01-01T00:00:02.000000000Z", "two again"]);
    plugin.script.log.push(["2026-01-01T00:00:03.000000000Z", "three"]);
    const next = reader.read();
    await clock.advance(1_000);
    assert.equal((await next).value, "two again\nthree\n");
    const poll = opts(reads().at(-1)!);
    assert.equal(poll.SinceTime, "2026-01-01T00:00:02.000000000Z", "since the last line shown");
    assert.equal(poll.Timestamps, true);
    stop.abort();
    await reader.cancel().catch(() => {});
  });
});

Deno.test("a deletion of a pod not adopted yet reaches the plugin, which cannot list its jobs", async () => {
  await withProvider({}, async ({ provider, plugin }) => {
    const pod = podOf("earlier");
    plugin.jobs.set(pod.metadata!.uid!, {
      pod,
      jid: "77",
      states: [plugin.running({ name: "main" })],
    });
    await provider.deletePod(structuredClone(pod), {});
    assert.ok(!plugin.jobs.has(pod.metadata!.uid!), "the earlier vkubelet's job is gone");
  });
});
