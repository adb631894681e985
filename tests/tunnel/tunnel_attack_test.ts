/**
 * The attacker's tests of the tunnel: each credential opens only its own pod's tunnel, a
 * forged or revoked one opens nothing, a pod reaches only the Services its namespace may see,
 * and the agent trusts only the vkubelet whose certificate it was given.
 * @module
 */
import assert from "node:assert/strict";
import { dialTunnel } from "../../app/agent/dial.ts";
import { MuxSession } from "../../core/tunnel/session.ts";
import { readMessage, writeMessage } from "../../core/tunnel/protocol.ts";
import {
  ListedServices,
  loopbackNetwork,
  remotePod,
  startTunnelServer,
} from "../../tools/tunnel/server.ts";

async function lab() {
  const services = new ListedServices();
  services.set([
    {
      namespace: "team-a",
      name: "web",
      clusterIP: "127.0.0.1",
      ports: [{ port: 1, protocol: "TCP" }],
    },
    {
      namespace: "team-b",
      name: "db",
      clusterIP: "127.0.0.1",
      ports: [{ port: 1, protocol: "TCP" }],
    },
  ]);
  const server = await startTunnelServer(loopbackNetwork(), services);
  const a = await server.host.attach(remotePod("a", "team-a", []));
  const b = await server.host.attach(remotePod("b", "team-b", []));
  return { server, a, b };
}

function dial(url: string, caPem: string, credential: string) {
  return dialTunnel({ server: new URL(url), caPem, credential });
}

Deno.test("a pod's credential with another pod's uid in it is refused", async () => {
  const { server, a } = await lab();
  await using _ = server;
  const [prefix, , secret] = a.agentCredential.split(".");
  await assert.rejects(
    dial(server.url, server.caPem, `${prefix}.uid-b.${secret}`),
    /refused the tunnel \(HTTP\/1\.1 401.*does not match/,
  );
});

Deno.test("a forged agent credential is refused", async () => {
  const { server } = await lab();
  await using _ = server;
  const forged = `vkt1.uid-b.${"A".repeat(43)}`;
  await assert.rejects(dial(server.url, server.caPem, forged), /401.*does not match/);
  await assert.rejects(dial(server.url, server.caPem, "Bearer anything"), /401.*not one vkubelet/);
  await assert.rejects(dial(server.url, server.caPem, ""), /401/);
});

Deno.test("a revoked credential is refused and its open tunnel ends", async () => {
  const { server, a } = await lab();
  await using _ = server;
  const session = new MuxSession(await dial(server.url, server.caPem, a.agentCredential), {
    client: true,
  });
  await server.host.detach(remotePod("a", "team-a", []));
  await session.closed;
  await assert.rejects(dial(server.url, server.caPem, a.agentCredential), /401.*revoked/);
});

Deno.test("a pod asking for a Service outside its namespace is refused", async () => {
  const { server, a } = await lab();
  await using _ = server;
  const session = new MuxSession(await dial(server.url, server.caPem, a.agentCredential), {
    client: true,
  });
  try {
    const stream = session.open();
    const writer = stream.writable.getWriter();
    await writeMessage(writer, { kind: "service", namespace: "team-b", name: "db", port: 1 });
    const { value } = await readMessage(stream.readable);
    assert.match(
      (value as { error?: string }).error ?? "ok",
      /may not reach Service team-b\/db: a pod reaches the Services of its namespace \(team-a\)/,
    );
  } finally {
    session.close();
    await session.closed;
  }
});

Deno.test("the agent refuses a vkubelet whose certificate is not the one it pins", async () => {
  const { server, a } = await lab();
  await using _ = server;
  await using impostor = await startTunnelServer(
    loopbackNetwork("127.0.0.3"),
    new ListedServices(),
  );
  // The real server's certificate pinned, the impostor's address dialed.
  await assert.rejects(dial(impostor.url, server.caPem, a.agentCredential), /certificate/i);
});
