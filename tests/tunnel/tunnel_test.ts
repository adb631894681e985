/**
 * The tunnel end to end on loopback: the kubelet API server with a tunnel host, the agent in
 * process, a "pod" HTTP server on 127.0.0.1 beside the agent and a Service backend.
 * @module
 */
import assert from "node:assert/strict";
import { runAgent } from "../../app/agent/mod.ts";
import {
  ListedServices,
  loopbackNetwork,
  remotePod,
  startTunnelServer,
} from "../../tools/tunnel/server.ts";

/**
 * Answers each connection with one HTTP response carrying `body` (raw TCP: the kubelet API's
 * Node adapter replaces the global Response, which Deno.serve then refuses).
 */
function httpServer(body: string) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const answer = new TextEncoder().encode(
    `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
  );
  const served = (async () => {
    for await (const conn of listener) {
      void (async () => {
        try {
          await conn.read(new Uint8Array(4096));
          await conn.write(answer);
        } catch {
          // the client went away
        } finally {
          conn.close();
        }
      })();
    }
  })().catch(() => {});
  return {
    addr: listener.addr,
    async [Symbol.asyncDispose]() {
      listener.close();
      await served;
    },
  };
}

async function hostsAddress(path: string, name: string): Promise<string> {
  const text = await Deno.readTextFile(path);
  const line = text.split("\n").find((l) => l.split(/\s+/).slice(1).includes(name));
  assert.ok(line, `no hosts entry for ${name} in:\n${text}`);
  return line.split(/\s+/)[0];
}

Deno.test("a connection to the pod IP reaches the pod beside the agent, and the agent reaches Services by name", async () => {
  await using podServer = httpServer("hello from the remote pod");
  await using backend = httpServer("hello from the Service");
  await using other = httpServer("other namespace");
  const services = new ListedServices();
  services.set([
    {
      namespace: "team",
      name: "web",
      clusterIP: "127.0.0.1",
      ports: [{ port: backend.addr.port, protocol: "TCP" }],
    },
    {
      namespace: "default",
      name: "kubernetes",
      clusterIP: "127.0.0.1",
      ports: [{ port: other.addr.port, protocol: "TCP" }],
    },
    {
      namespace: "elsewhere",
      name: "secret",
      clusterIP: "127.0.0.1",
      ports: [{ port: other.addr.port, protocol: "TCP" }],
    },
  ]);
  const network = loopbackNetwork();
  await using server = await startTunnelServer(network, services);
  const pod = remotePod("job", "team", [podServer.addr.port]);
  const attached = await server.host.attach(pod);
  assert.equal(attached.podIP, "127.0.0.2");
  assert.ok(
    !attached.agentArgs.some((a) => a.includes(attached.agentCredential)),
    "no credential in argv",
  );

  const dir = await Deno.makeTempDir();
  const hostsFile = `${dir}/hosts`;
  const stop = new AbortController();
  const ready = Promise.withResolvers<void>();
  const agent = runAgent({
    server: new URL(server.url),
    caPem: atob(attached.agentArgs.find((a) => a.startsWith("--ca-base64="))!.slice(12)),
    credential: attached.agentCredential,
    hostsFile,
    log: () => {},
    onReady: () => ready.resolve(),
  }, stop.signal);
  try {
    await ready.promise;
    // Inbound: the pod IP on the declared port, answered by the pod where the agent runs.
    const inbound = await fetch(`http://127.0.0.2:${podServer.addr.port}/`);
    assert.equal(await inbound.text(), "hello from the remote pod");

    // Outbound: by name, through the tunnel, dialed by vkubelet at the ClusterIP.
    const address = await hostsAddress(hostsFile, "web.team.svc.cluster.local");
    assert.match(address, /^127\.77\./);
    assert.equal(await hostsAddress(hostsFile, "web"), address, "short name in its namespace");
    const viaName = await fetch(`http://${address}:${backend.addr.port}/`);
    assert.equal(await viaName.text(), "hello from the Service");
    assert.deepEqual(network.dials, [`127.0.0.1:${backend.addr.port}`]);
    await hostsAddress(hostsFile, "kubernetes.default.svc.cluster.local");
    const hosts = await Deno.readTextFile(hostsFile);
    assert.ok(!hosts.includes("secret"), `another namespace's Service is listed:\n${hosts}`);

    // Services come and go: the hosts file follows.
    services.set([
      {
        namespace: "team",
        name: "api",
        clusterIP: "127.0.0.1",
        ports: [{ port: backend.addr.port, protocol: "TCP" }],
      },
    ]);
    for (let i = 0; i < 50 && !(await Deno.readTextFile(hostsFile)).includes("api.team"); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const after = await Deno.readTextFile(hostsFile);
    assert.match(after, /api\.team\.svc\.cluster\.local/);
    assert.doesNotMatch(after, /web\.team/);
  } finally {
    stop.abort();
    await agent;
    await server.host.detach(pod);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with the tunnel off, the pod IP's port refuses and no Service name is written", async () => {
  await using podServer = httpServer("hello from the remote pod");
  const services = new ListedServices();
  await using server = await startTunnelServer(loopbackNetwork(), services);
  const pod = remotePod("job", "team", [podServer.addr.port]);
  await server.host.attach(pod);
  // No agent dialed in: the listener takes the connection and closes it.
  await assert.rejects(fetch(`http://127.0.0.2:${podServer.addr.port}/`));
  await server.host.detach(pod);
});
