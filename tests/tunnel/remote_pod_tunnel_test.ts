/**
 * Start-up's wiring of `--remote-pod-network` on loopback: the kubelet API with the node's
 * RemotePodTunnel on `/tunnel` (its serving certificate tapped for the agents to pin),
 * the kit's RemotePods with it as `podNetwork`, and a backend whose "job" runs the agent from
 * the attachment's command and credential, beside a pod server. The pod is then reached at its
 * attached IP and calls a Service by its hosts-file name; after the pod is deleted, the pod IP
 * answers no more and its agent's credential opens no tunnel. Also the file's schema, and Services
 * from an informer.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod, Service } from "kubernetes-types/core/v1.d.ts";
import { parseAgentArgs, runAgent } from "../../app/agent/mod.ts";
import { dialTunnel } from "../../app/agent/dial.ts";
import { InformedServices, readRemotePodNetwork } from "../../app/run/tunnel.ts";
import { realClock } from "../../base/clock.ts";
import { log } from "../../tools/harness/kubelet_api_fakes.ts";
import type { Informer } from "../../k8s/mod.ts";
import { type RemoteBackend, RemotePods, type RemoteRun } from "../../provider/mod.ts";
import { ListedServices, loopbackNetwork, startTunnelNode } from "../../tools/tunnel/server.ts";

const POD_IP = "127.0.0.3";

/** One HTTP answer per connection, raw TCP. */
function httpServer(body: string) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const answer = new TextEncoder().encode(
    `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
  );
  const served = (async () => {
    for await (const conn of listener) {
      void conn.read(new Uint8Array(4096)).then(() => conn.write(answer)).catch(() => {})
        .finally(() => conn.close());
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

/** A backend whose make runs the attachment's agent in this process, as a job would. */
function agentBackend(hostsFile: string, stop: AbortSignal) {
  const runs = new Map<string, RemoteRun>();
  const agents: Promise<void>[] = [];
  const made: { caPem: string; credential: string }[] = [];
  const ready = Promise.withResolvers<void>();
  const backend: RemoteBackend = {
    list: () => Promise.resolve([]),
    read: (pod) => Promise.resolve(runs.get(pod.metadata!.uid!)),
    async make(pod, _signal, options) {
      const network = options?.network;
      assert.ok(network, "make got no attachment");
      const at = network.agentCommand.indexOf("agent");
      assert.ok(at > 0, `no agent subcommand in ${network.agentCommand.join(" ")}`);
      const parsed = await parseAgentArgs(
        [...network.agentCommand.slice(at + 1), `--hosts-file=${hostsFile}`],
        { VKUBELET_AGENT_CREDENTIAL: network.agentCredential },
      );
      assert.ok(!("problems" in parsed), JSON.stringify(parsed));
      made.push({ caPem: parsed.caPem, credential: parsed.credential });
      agents.push(runAgent({ ...parsed, log: () => {}, onReady: () => ready.resolve() }, stop));
      const state = { running: { startedAtMs: Date.now() } };
      runs.set(pod.metadata!.uid!, { pod, containers: { app: { state } } });
    },
    remove(pod) {
      runs.delete(pod.metadata!.uid!);
      return Promise.resolve();
    },
  };
  return { backend, agents, made, ready: ready.promise };
}

Deno.test("a remote pod made through the kit is reached at its attached IP and calls a Service by name", async () => {
  await using pod = httpServer("hello from the job");
  await using service = httpServer("hello from the Service");
  const services = new ListedServices();
  services.set([{
    namespace: "team",
    name: "web",
    clusterIP: "127.0.0.1",
    ports: [{ port: service.port, protocol: "TCP" }],
  }]);
  const stop = new AbortController();
  const dir = await Deno.makeTempDir();
  const hostsFile = `${dir}/hosts`;
  await using node = await startTunnelNode(loopbackNetwork(POD_IP), services, ["vkubelet"]);
  const tunnel = node.tunnel;
  const { backend, agents, made, ready } = agentBackend(hostsFile, stop.signal);
  const pods = new RemotePods({
    backend,
    clock: realClock,
    log,
    intervalMs: 60_000,
    podNetwork: tunnel,
  });
  const running = pods.run(stop.signal);
  try {
    const spec: Pod = {
      metadata: { namespace: "team", name: "job", uid: "uid-job" },
      spec: {
        restartPolicy: "Never",
        containers: [{ name: "app", image: "x", ports: [{ containerPort: pod.port }] }],
      },
    };
    await pods.createPod(spec, {});
    const status = (await pods.getPod("team", "job"))?.status;
    assert.equal(status?.podIP, POD_IP, "status.podIP is the attached IP");
    await ready;

    const inbound = await fetch(`http://${POD_IP}:${pod.port}/`);
    assert.equal(await inbound.text(), "hello from the job");
    const hosts = await Deno.readTextFile(hostsFile);
    const line = hosts.split("\n").find((l) => l.includes("web.team.svc.cluster.local"));
    assert.ok(line, hosts);
    const viaName = await fetch(`http://${line.split(/\s+/)[0]}:${service.port}/`);
    assert.equal(await viaName.text(), "hello from the Service");

    // Deleted: detached, so the pod IP refuses and the agent's credential opens nothing.
    await pods.deletePod(spec, {});
    for (let i = 0; i < 100 && await pods.getPod("team", "job"); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await assert.rejects(fetch(`http://${POD_IP}:${pod.port}/`));
    // The deleted pod's credential (leaked from its job) opens no tunnel any more.
    await assert.rejects(
      dialTunnel({
        server: new URL(node.url),
        caPem: made[0].caPem,
        credential: made[0].credential,
      }),
      /401|revoked or unknown/,
    );
  } finally {
    stop.abort();
    await Promise.all([running, ...agents]);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the remote pod network file takes the CNI keys and the tunnel's, and names what is wrong", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const good = `${dir}/good.yaml`;
    await Deno.writeTextFile(
      good,
      "cniConfDir: /etc/cni/net.d\nclusterDomain: cluster.local\npodCIDR: 10.244.9.0/24\n" +
        "serverUrl: https://vk.example:10250\nagentCommand: [/shared/bin/vkubelet]\n",
    );
    const parsed = await readRemotePodNetwork(good);
    assert.equal(parsed.podCIDR, "10.244.9.0/24");
    assert.deepEqual(parsed.agentCommand, ["/shared/bin/vkubelet"]);
    assert.deepEqual(parsed.cniBinDir, ["/opt/cni/bin"]);
    const bad = `${dir}/bad.yaml`;
    await Deno.writeTextFile(bad, "serverUrl: http://vk:10250\nagentCommand: []\nsurprise: 1\n");
    await assert.rejects(readRemotePodNetwork(bad), (err: Error) => {
      assert.match(err.message, /serverUrl/);
      assert.match(err.message, /agentCommand/);
      assert.match(err.message, /surprise/);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Services from the informer: a namespace's with a ClusterIP, and changes told", () => {
  const handlers: (() => void)[] = [];
  const objects: Service[] = [
    {
      metadata: { namespace: "team", name: "web" },
      spec: { clusterIP: "10.96.0.5", ports: [{ port: 80 }] },
    },
    {
      metadata: { namespace: "team", name: "headless" },
      spec: { clusterIP: "None", ports: [{ port: 80 }] },
    },
    {
      metadata: { namespace: "other", name: "db" },
      spec: { clusterIP: "10.96.0.6", ports: [{ port: 5432 }] },
    },
  ];
  const informer = {
    store: { list: () => objects },
    on: (_event: string, handler: () => void) => {
      handlers.push(handler);
      return () => {};
    },
  } as unknown as Informer<Service>;
  const services = new InformedServices(informer);
  assert.deepEqual(services.list("team"), [{
    namespace: "team",
    name: "web",
    clusterIP: "10.96.0.5",
    ports: [{ port: 80, protocol: "TCP" }],
  }]);
  let told = 0;
  services.subscribe(() => told++);
  for (const h of handlers) h();
  assert.equal(told, 3, "add, update and delete are each told");
});
