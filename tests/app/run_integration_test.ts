import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { loadConfig } from "../../app/config/config.ts";
import { LoopFailedError, runVkubelet } from "../../app/run/mod.ts";
import { loadProvider } from "../../app/provider_loader.ts";
import { realClock } from "../../base/clock.ts";
import type { PodEventRecorder } from "../../provider/mod.ts";

Deno.test("a loop that fails after start-up shuts everything down in order and rejects", async () => {
  const cluster = await useCluster();
  const nodeName = `run-loop-fails-${Deno.pid}`;
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const loaded = await loadConfig({
    args: [
      "--provider=mock",
      `--kubeconfig=${await cluster.nodeKubeconfig(nodeName)}`,
      `--nodename=${nodeName}`,
      "--listen-address=127.0.0.1",
      `--port=${port}`,
      "--tls-self-signed",
    ],
    env: {},
    readFile: Deno.readTextFile,
  });
  assert.ok(loaded.ok, JSON.stringify(loaded));
  let squatter: Deno.Listener | undefined;
  let closed = 0;
  const stop = new AbortController();
  try {
    const run = runVkubelet(loaded.config, {
      signal: stop.signal,
      clock: realClock,
      detectInternalIp: () => "127.0.0.1",
      drainTimeoutMs: 5_000,
      loadProvider: async (options) => {
        const provider = await loadProvider(options);
        // The port passed the checks; someone takes it before the kubelet API listens.
        squatter = Deno.listen({ hostname: "127.0.0.1", port });
        const close = provider.close?.bind(provider);
        provider.close = async () => {
          closed++;
          await close?.();
        };
        return provider;
      },
    });
    await assert.rejects(run, (err: unknown) => {
      assert.ok(err instanceof LoopFailedError, String(err));
      assert.match(err.message, /^kubelet API failed: .*(in use|EADDRINUSE)/i);
      return true;
    });
    assert.equal(closed, 1, "provider.close() is called once on the way out");
  } finally {
    stop.abort();
    squatter?.close();
    await cluster.kubectl(["delete", "node", nodeName, "--ignore-not-found", "--wait=false"]);
  }
});

Deno.test("a provider records through the node's rate-limited recorder, into the cluster", async () => {
  const cluster = await useCluster();
  const nodeName = `run-provider-events-${Deno.pid}`;
  const loaded = await loadConfig({
    args: [
      "--provider=mock",
      `--kubeconfig=${await cluster.nodeKubeconfig(nodeName)}`,
      `--nodename=${nodeName}`,
      "--listen-address=127.0.0.1",
      "--port=0",
      "--tls-self-signed",
    ],
    env: {},
    readFile: Deno.readTextFile,
  });
  assert.ok(loaded.ok, JSON.stringify(loaded));
  const stop = new AbortController();
  let events: PodEventRecorder | undefined;
  const ready = Promise.withResolvers<void>();
  const run = runVkubelet(loaded.config, {
    signal: stop.signal,
    clock: realClock,
    detectInternalIp: () => "127.0.0.1",
    drainTimeoutMs: 5_000,
    onReady: () => ready.resolve(),
    loadProvider: (options) => {
      events = options.deps.events;
      return loadProvider(options);
    },
  });
  const name = `provider-events-${Deno.pid}`;
  const pod = { metadata: { namespace: "default", name, uid: crypto.randomUUID() } };
  try {
    await Promise.race([ready.promise, run]);
    assert.ok(events, "the provider is given the node's recorder");
    for (let i = 0; i < 30; i++) {
      events.record(pod, { type: "Warning", reason: "Relayed", message: `#${i}`, component: "x" });
    }
    const inCluster = async () => {
      const out = await cluster.kubectlIn("default")([
        ...["get", "events", "-o", "json"],
        ...["--field-selector", `involvedObject.name=${name}`],
      ]);
      return JSON.parse(out).items as { source?: { component?: string; host?: string } }[];
    };
    let seen: Awaited<ReturnType<typeof inCluster>> = [];
    for (let i = 0; i < 100 && seen.length < 25; i++) {
      await new Promise((r) => setTimeout(r, 100));
      seen = await inCluster();
    }
    await new Promise((r) => setTimeout(r, 500));
    seen = await inCluster();
    assert.equal(
      seen.length,
      25,
      "30 events in a burst: the kubelet's per-pod burst of 25 reaches the cluster",
    );
    assert.ok(seen.every((e) => e.source?.component === "x" && e.source?.host === nodeName));
  } finally {
    stop.abort();
    await run.catch(() => {});
    await cluster.kubectl([
      "delete",
      "events",
      "-n",
      "default",
      "--field-selector",
      `involvedObject.name=${name}`,
      "--ignore-not-found",
    ]);
    await cluster.kubectl(["delete", "node", nodeName, "--ignore-not-found", "--wait=false"]);
  }
});
