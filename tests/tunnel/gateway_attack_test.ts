/**
 * The attacker's tests of the node's gateway (issue #64 item 4): a pod's credential is never a
 * gateway's nor the other way round, a forged or revoked gateway credential opens nothing, the
 * gateway reaches only the Services it was listed, for pods of this node at the address it
 * names (never one on the other cluster's host network), each as that pod's namespace allows, and a pod's agent dials no host vkubelet names.
 * @module
 */
import assert from "node:assert/strict";
import { dialTunnel } from "../../app/agent/dial.ts";
import { servePort } from "../../app/agent/mod.ts";
import { MuxSession } from "../../core/tunnel/session.ts";
import { readMessage, writeMessage } from "../../core/tunnel/protocol.ts";
import {
  ListedServices,
  loopbackPodsNetwork,
  remotePod,
  sourceEcho,
  startTunnelServer,
} from "../../tools/tunnel/server.ts";
import { duplexPair } from "./_pair.ts";

const A_ADDRESS = "127.0.62.5";

/** team-a/web and team-b/db, both served by `port`; a gateway pod in team-a at A_ADDRESS. */
async function lab(port: number) {
  const services = new ListedServices();
  services.set([
    {
      namespace: "team-a",
      name: "web",
      clusterIP: "127.0.0.1",
      ports: [{ port, protocol: "TCP" }],
    },
    { namespace: "team-b", name: "db", clusterIP: "127.0.0.1", ports: [{ port, protocol: "TCP" }] },
  ]);
  const network = loopbackPodsNetwork(63);
  const server = await startTunnelServer(network, services);
  const gateway = await server.host.gateway();
  const podA = remotePod("a", "team-a", []);
  await gateway.attach(podA);
  gateway.setRemoteAddress(podA, A_ADDRESS);
  gateway.setServices([
    { namespace: "team-a", name: "web", port, gatewayPort: 20001 },
    { namespace: "team-b", name: "db", port, gatewayPort: 20002 },
  ]);
  return { server, gateway, network };
}

function dial(server: { url: string; caPem: string }, credential: string) {
  return dialTunnel({ server: new URL(server.url), caPem: server.caPem, credential });
}

/** Opens a stream with `header` on `session`; the answer's error, or "ok". */
async function ask(session: MuxSession, header: unknown): Promise<string> {
  const stream = session.open();
  const writer = stream.writable.getWriter();
  await writeMessage(writer, header);
  const { value } = await readMessage(stream.readable);
  stream.reset();
  return (value as { error?: string }).error ?? "ok";
}

Deno.test("a pod's credential is not a gateway's, and its agent cannot call a Service as another pod", async () => {
  await using backend = sourceEcho("127.0.0.1", "backend saw");
  const { server, gateway } = await lab(backend.port);
  await using _ = server;
  const agentPod = await server.host.attach(remotePod("job", "team-a", []));
  const again = await server.host.gateway({ credential: agentPod.agentCredential });
  assert.notEqual(again.agentCredential, agentPod.agentCredential);
  assert.match(again.agentCredential, /^vkg1\./);
  // The node's gateway credential was replaced by that call: the earlier one opens nothing.
  await assert.rejects(dial(server, gateway.agentCredential), /401.*does not match/);

  const session = new MuxSession(await dial(server, agentPod.agentCredential), { client: true });
  try {
    const asA = { kind: "service", namespace: "team-a", name: "web", port: backend.port };
    assert.match(
      await ask(session, { ...asA, source: A_ADDRESS }),
      /only a gateway names a source/,
    );
    assert.match(
      await ask(session, { kind: "port", port: backend.port, host: "127.0.0.1" }),
      /opens control and service streams only/,
    );
  } finally {
    session.close();
    await session.closed;
  }
});

Deno.test("a forged, revoked or pod-shaped gateway credential is refused", async () => {
  const { server, gateway } = await lab(1);
  await using _ = server;
  const secret = gateway.agentCredential.split(".")[2];
  await assert.rejects(dial(server, `vkg1.gateway.${"A".repeat(43)}`), /401.*does not match/);
  // The gateway's secret under a pod's kind or another id opens neither.
  await assert.rejects(dial(server, `vkt1.gateway.${secret}`), /401/);
  await assert.rejects(dial(server, `vkt1.uid-a.${secret}`), /401/);
  await assert.rejects(dial(server, `vkg1.uid-a.${secret}`), /401/);

  const session = new MuxSession(await dial(server, gateway.agentCredential), { client: true });
  await server.host.revokeGateway();
  await session.closed;
  await assert.rejects(dial(server, gateway.agentCredential), /401.*revoked/);
  const renewed = await server.host.gateway({ credential: gateway.agentCredential });
  assert.notEqual(renewed.agentCredential, gateway.agentCredential);
});

Deno.test("the gateway reaches only listed Services, for a pod of this node at the source, as its namespace allows", async () => {
  await using backend = sourceEcho("127.0.0.1", "backend saw");
  const { server, gateway, network } = await lab(backend.port);
  await using _ = server;
  const agentPod = remotePod("job", "team-b", []);
  await server.host.attach(agentPod);
  // A provider's slip: an agent pod's address set through the gateway is not the gateway's.
  gateway.setRemoteAddress(agentPod, "127.0.62.9");
  // A pod on the other cluster's host network has its node's address, which names no one pod.
  const hostPod = remotePod("host", "team-a", []);
  hostPod.spec!.hostNetwork = true;
  await gateway.attach(hostPod);
  gateway.setRemoteAddress(hostPod, "127.0.62.8");
  const session = new MuxSession(await dial(server, gateway.agentCredential), { client: true });
  const web = { kind: "service", namespace: "team-a", name: "web", port: backend.port };
  try {
    assert.equal(await ask(session, { ...web, source: A_ADDRESS }), "ok", "the lab works");
    assert.match(await ask(session, { ...web, source: "127.0.62.7" }), /No pod of this node/);
    assert.match(await ask(session, { ...web, source: "127.0.62.9" }), /No pod of this node/);
    assert.match(await ask(session, { ...web, source: "127.0.62.8" }), /No pod of this node/);
    assert.match(await ask(session, { ...web, source: "web.team-a" }), /host or source an IP/);
    assert.match(await ask(session, web), /service streams with a source only/);
    assert.match(
      await ask(session, {
        kind: "service",
        namespace: "team-b",
        name: "db",
        port: backend.port,
        source: A_ADDRESS,
      }),
      /may not reach Service team-b\/db: a pod reaches the Services of its namespace \(team-a\)/,
    );
    assert.match(
      await ask(session, { ...web, port: backend.port + 1, source: A_ADDRESS }),
      /is not one the gateway serves/,
    );
    gateway.setServices([]);
    assert.match(
      await ask(session, { ...web, source: A_ADDRESS }),
      /is not one the gateway serves/,
    );
    assert.equal(network.dials.length, 1, `only the lab's call was dialed: ${network.dials}`);
  } finally {
    session.close();
    await session.closed;
  }
});

Deno.test("a pod's agent refuses to dial a host vkubelet names", async () => {
  await using other = sourceEcho("127.0.0.9", "elsewhere");
  const [near, far] = duplexPair();
  const vkubelet = new MuxSession(near, { client: false });
  const agent = new MuxSession(far, {
    client: true,
    onStream: (s) => void servePort(s, "127.0.0.1", false),
  });
  try {
    assert.match(
      await ask(vkubelet, { kind: "port", port: other.port, host: "127.0.0.9" }),
      /A pod's agent dials its own pod only/,
    );
  } finally {
    vkubelet.close();
    agent.close();
    await Promise.all([vkubelet.closed, agent.closed]);
  }
});
