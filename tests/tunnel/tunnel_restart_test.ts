/**
 * A vkubelet restart keeps remote pods' network (issue #64): start-up's RemotePodTunnel and the
 * kit's RemotePods are torn down and built again from the same attachments directory, on the
 * same port and serving certificate, over a backend whose runs (the remote side) live on. The
 * adopted pod keeps its IP, its agent (running all along) reconnects with its old credential
 * and is served again, that credential opens only its own pod's tunnel, and a pod whose run went
 * away while vkubelet was down is detached and its state removed. Fakes of our own interfaces;
 * pod "IPs" on loopback.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { parseAgentArgs, runAgent } from "../../app/agent/mod.ts";
import { dialTunnel } from "../../app/agent/dial.ts";
import { RemotePodTunnel } from "../../app/run/tunnel.ts";
import { freePort } from "../../app/run/parts.ts";
import { realClock } from "../../base/clock.ts";
import { alwaysAllow, KubeletServer } from "../../core/kubelet_api/mod.ts";
import type { SavedNetwork, TunnelConn, TunnelNetwork } from "../../core/tunnel/host.ts";
import { type RemoteBackend, RemotePods, type RemoteRun } from "../../provider/mod.ts";
import { bareProvider, log } from "../../tools/harness/kubelet_api_fakes.ts";
import { ListedServices } from "../../tools/tunnel/server.ts";
import { type KeyPair, selfSignedCertificate } from "../../x509/mod.ts";

/**
 * Pod IPs `127.0.<subnet>.<n>`, a new one per setUp (a restarted process's first setUp would
 * give another IP than the pod had); the netns names the IP. Records setUp, restore, tearDown.
 */
function loopbackPods(subnet: number, calls: string[]): TunnelNetwork {
  let next = 10;
  const conn = (c: Deno.Conn): TunnelConn => ({
    readable: c.readable,
    writable: c.writable,
    close: () => {
      try {
        c.close();
      } catch {
        // closed
      }
    },
  });
  return {
    setUp(pod) {
      const ip = `127.0.${subnet}.${next++}`;
      calls.push(`setUp ${pod.metadata?.uid} ${ip}`);
      return Promise.resolve({ ips: [ip], netns: `ip:${ip}` });
    },
    restore(pod, saved: SavedNetwork) {
      calls.push(`restore ${pod.metadata?.uid} ${saved.ips[0]}`);
      return Promise.resolve();
    },
    tearDown(pod, saved?: SavedNetwork) {
      calls.push(`tearDown ${pod.metadata?.uid}${saved ? ` ${saved.ips[0]}` : ""}`);
      return Promise.resolve();
    },
    dial(_netns, host, port) {
      const opened = Deno.connect({ hostname: host, port });
      const ts = new TransformStream<Uint8Array, Uint8Array>();
      void opened.then((c) => c.readable.pipeTo(ts.writable)).catch(() => {});
      return {
        readable: ts.readable,
        writable: new WritableStream({
          async write(chunk) {
            const w = (await opened).writable.getWriter();
            await w.write(chunk);
            w.releaseLock();
          },
          async close() {
            await (await opened).closeWrite().catch(() => {});
          },
        }),
        close: () => void opened.then((c) => c.close()).catch(() => {}),
      };
    },
    listen(netns, port, onConnection) {
      const listener = Deno.listen({ hostname: netns.slice(3), port });
      void (async () => {
        try {
          for await (const c of listener) onConnection(conn(c));
        } catch {
          // closed
        }
      })();
      return Promise.resolve({ close: () => Promise.resolve(listener.close()) });
    },
  };
}

/** One HTTP answer per connection on 127.0.0.1, raw TCP. */
function httpServer(body: string) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const answer = new TextEncoder().encode(
    `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
  );
  const served = (async () => {
    for await (const c of listener) {
      void c.read(new Uint8Array(4096)).then(() => c.write(answer)).catch(() => {})
        .finally(() => c.close());
    }
  })().catch(() => {});
  return {
    port: listener.addr.port,
    async [Symbol.asyncDispose]() {
      listener.close();
      await served;
    },
  };
}

/** The remote side: runs outlive vkubelet; make starts the pod's agent from the attachment. */
function remoteSide(stop: AbortSignal, dir: string) {
  const runs = new Map<string, RemoteRun>();
  const agents: Promise<void>[] = [];
  const credentials = new Map<string, { caPem: string; credential: string }>();
  const agentLogs: string[] = [];
  const backend: RemoteBackend = {
    list: () => Promise.resolve([...runs.values()]),
    read: (pod) => Promise.resolve(runs.get(pod.metadata!.uid!)),
    async make(pod, _signal, options) {
      const network = options?.network;
      assert.ok(network, "make got no attachment");
      const at = network.agentCommand.indexOf("agent");
      const parsed = await parseAgentArgs(
        [...network.agentCommand.slice(at + 1), `--hosts-file=${join(dir, pod.metadata!.uid!)}`],
        { VKUBELET_AGENT_CREDENTIAL: network.agentCredential },
      );
      assert.ok(!("problems" in parsed), JSON.stringify(parsed));
      credentials.set(pod.metadata!.uid!, { caPem: parsed.caPem, credential: parsed.credential });
      const uid = pod.metadata!.uid!;
      agents.push(runAgent({ ...parsed, log: (m) => agentLogs.push(`${uid}: ${m}`) }, stop));
      const state = { running: { startedAtMs: Date.now() } };
      // The backend's own address, which the cluster cannot reach.
      runs.set(uid, { pod, containers: { app: { state } }, podIP: "10.9.9.9" });
    },
    remove(pod) {
      runs.delete(pod.metadata!.uid!);
      return Promise.resolve();
    },
  };
  return { backend, runs, agents, credentials, agentLogs };
}

/** One vkubelet "process": the kubelet API with the node's tunnel, and RemotePods over it. */
async function startVkubelet(options: {
  port: number;
  pair: KeyPair;
  attachments: string;
  network: TunnelNetwork;
  backend: RemoteBackend;
}) {
  const stop = new AbortController();
  const url = `https://127.0.0.1:${options.port}`;
  const tunnel = new RemotePodTunnel({
    network: options.network,
    services: new ListedServices(),
    log,
    serverUrl: url,
    agentProgram: ["vkubelet"],
    attachmentsDir: options.attachments,
  });
  const certificates = tunnel.tap({
    run(onPair, signal) {
      onPair(options.pair);
      return new Promise((resolve) => signal.addEventListener("abort", () => resolve()));
    },
  });
  const server = new KubeletServer({
    provider: bareProvider(),
    nodeName: "tunnel-node",
    podCache: () => [],
    log,
    clock: realClock,
    auth: { accessReviewer: alwaysAllow },
    hostname: "127.0.0.1",
    port: options.port,
    certificates,
    shutdownGraceMs: 0,
    tunnel,
  });
  const serving = server.run(stop.signal);
  await Promise.race([server.ready, serving]);
  const pods = new RemotePods({
    backend: options.backend,
    clock: realClock,
    log,
    intervalMs: 60_000,
    podNetwork: tunnel,
  });
  const running = pods.run(stop.signal);
  return {
    url,
    pods,
    /** As SIGTERM does: the loops stop, the tunnels end, the pods' networks stay. */
    async stop() {
      stop.abort();
      await running;
      await tunnel.close();
      await serving;
    },
  };
}

async function eventually<T>(what: string, check: () => Promise<T | false>, ms = 15_000) {
  const until = Date.now() + ms;
  let last: unknown;
  while (Date.now() < until) {
    try {
      const got = await check();
      if (got !== false) return got;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not happen within ${ms} ms${last ? `: ${last}` : ""}`);
}

function remotePod(name: string, port: number): Pod {
  return {
    metadata: { namespace: "team", name, uid: `uid-${name}` },
    spec: {
      restartPolicy: "Never",
      containers: [{ name: "app", image: "x", ports: [{ containerPort: port }] }],
    },
  };
}

/** A one-shot certificate pair, served by both incarnations (as `--tls-cert-file` would be). */
async function servingPair(): Promise<KeyPair> {
  const stop = new AbortController();
  const got = Promise.withResolvers<KeyPair>();
  const running = selfSignedCertificate({
    nodeName: "tunnel-node",
    dnsNames: ["localhost"],
    ipAddresses: ["127.0.0.1"],
    clock: realClock,
    log,
  }).run((pair) => got.resolve(pair), stop.signal);
  const pair = await got.promise;
  stop.abort();
  await running;
  return pair;
}

Deno.test("after a restart an adopted remote pod keeps its IP and its agent's credential, and a pod gone meanwhile is detached", async () => {
  await using app = httpServer("hello from the job");
  await using other = httpServer("hello from the other job");
  const dir = await Deno.makeTempDir();
  const attachments = join(dir, "attachments");
  const agentsStop = new AbortController();
  const remote = remoteSide(agentsStop.signal, dir);
  const pair = await servingPair();
  const port = freePort("127.0.0.1");
  const calls: string[] = [];
  let vk = await startVkubelet({
    port,
    pair,
    attachments,
    network: loopbackPods(1, calls),
    backend: remote.backend,
  });
  try {
    const job = remotePod("job", app.port);
    const gone = remotePod("gone", other.port);
    await vk.pods.createPod(job, {});
    await vk.pods.createPod(gone, {});
    const ip = (await vk.pods.getPod("team", "job"))?.status?.podIP;
    assert.equal(ip, "127.0.1.10");
    const answer = (url: string) =>
      eventually(url, async () => {
        const res = await fetch(url);
        return res.ok && await res.text();
      });
    assert.equal(await answer(`http://${ip}:${app.port}/`), "hello from the job");

    // vkubelet stops; the jobs run on; one of them ends while vkubelet is away.
    await vk.stop();
    await assert.rejects(fetch(`http://${ip}:${app.port}/`), "the pod IP answered while down");
    remote.runs.delete("uid-gone");

    // The same flags again: a fresh process's setUp would give 127.0.2.10.
    vk = await startVkubelet({
      port,
      pair,
      attachments,
      network: loopbackPods(2, calls),
      backend: remote.backend,
    });
    await vk.pods.listPods({}); // once the first list's runs are adopted
    const status = (await vk.pods.getPod("team", "job"))?.status;
    assert.ok(status, "the job's pod was not adopted");
    assert.equal(status.podIP, ip, "the adopted pod kept its IP");
    // The agent that ran all along reconnects with its old credential and is served again.
    assert.equal(await answer(`http://${ip}:${app.port}/`), "hello from the job");
    const { caPem, credential } = remote.credentials.get("uid-job")!;
    const server = new URL(vk.url);
    (await dialTunnel({ server, caPem, credential })).close();

    // Only its own pod: the secret under the gone pod's uid opens nothing.
    const forged = credential.replace("uid-job", "uid-gone");
    await assert.rejects(dialTunnel({ server, caPem, credential: forged }), /401/);
    // The gone pod: detached (its network torn down as it was), its credential refused, its
    // state removed.
    await assert.rejects(Deno.stat(join(attachments, "uid-gone.json")), Deno.errors.NotFound);
    assert.ok(calls.includes("tearDown uid-gone 127.0.1.11"), calls.join("\n"));
    assert.ok(calls.includes("restore uid-job 127.0.1.10"), calls.join("\n"));
    assert.ok(!calls.some((c) => c.startsWith("setUp uid-job 127.0.2")), calls.join("\n"));
    await assert.rejects(
      dialTunnel({ server, caPem, credential: remote.credentials.get("uid-gone")!.credential }),
      /401/,
    );
    await assert.rejects(fetch(`http://127.0.1.11:${other.port}/`));
    // The adopted pod's attachment is still kept: 0600, with the credential's hash and never the credential.
    const file = join(attachments, "uid-job.json");
    assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
    const kept = await Deno.readTextFile(file);
    const secret = remote.credentials.get("uid-job")!.credential;
    assert.ok(!kept.includes(secret.split(".")[2]), "the credential itself is kept");
    // The old credential's hash and the new one's (for the pod's next runs).
    assert.match(kept, /"credentialHashes":\["[0-9a-f]{64}","[0-9a-f]{64}"\]/);
  } finally {
    await vk.stop();
    agentsStop.abort();
    await Promise.all(remote.agents);
    await Deno.remove(dir, { recursive: true });
  }
});
