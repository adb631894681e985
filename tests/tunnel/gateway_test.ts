/**
 * A node's gateway end to end on loopback (issue #64 item 4): the kubelet API with a tunnel host,
 * the gateway agent in process (`--gateway`), pods' IPs here `127.0.61.x` (each dial from a pod's
 * namespace leaves from its IP), pods' addresses in "the other cluster" `127.0.62.x` and the
 * gateway's own there `127.0.62.1`.
 * @module
 */
import assert from "node:assert/strict";
import { parseAgentArgs, runAgent } from "../../app/agent/mod.ts";
import { dialTunnel } from "../../app/agent/dial.ts";
import { freePort } from "../../app/run/parts.ts";
import { MuxSession } from "../../core/tunnel/session.ts";
import type { TunnelGateway } from "../../core/tunnel/host.ts";
import { eventually } from "../../tools/harness/wait.ts";
import {
  ListedServices,
  loopbackPodsNetwork,
  readAll,
  remotePod,
  sourceEcho,
  startTunnelNode,
  startTunnelServer,
  type TunnelServer,
  untilEofEcho,
} from "../../tools/tunnel/server.ts";

const GATEWAY_ADDRESS = "127.0.62.1";
const POD_ADDRESS = "127.0.62.5";

/** Runs the gateway agent for `gateway` until the returned stop; `logs` gets its lines. */
async function startGateway(
  server: TunnelServer,
  gateway: TunnelGateway,
  listenAddress = GATEWAY_ADDRESS,
  logs: string[] = [],
) {
  const stop = new AbortController();
  const ready = Promise.withResolvers<void>();
  const running = runAgent({
    server: new URL(server.url),
    caPem: server.caPem,
    credential: gateway.agentCredential,
    gateway: true,
    listenAddress,
    log: (line) => logs.push(line),
    onReady: () => ready.resolve(),
  }, stop.signal);
  await Promise.race([ready.promise, running]);
  return {
    async stop() {
      stop.abort();
      await running;
    },
  };
}

Deno.test("a connection to a gateway pod's IP here reaches the pod's address in the other cluster through the gateway", async () => {
  await using pod = sourceEcho(POD_ADDRESS, "pod answered");
  const network = loopbackPodsNetwork(61);
  await using server = await startTunnelServer(network, new ListedServices());
  const gateway = await server.host.gateway();
  assert.deepEqual(gateway.agentArgs.slice(0, 2), ["agent", "--gateway"]);
  assert.match(gateway.agentCredential, /^vkg1\.gateway\./);
  const spec = remotePod("web", "team", [pod.port]);
  const { podIP } = await gateway.attach(spec);
  assert.equal(podIP, "127.0.61.10");

  // No address there yet: the connection is closed at once.
  await assert.rejects(readAll(podIP, pod.port));
  gateway.setRemoteAddress(spec, POD_ADDRESS);
  // The gateway not connected: the same.
  await assert.rejects(readAll(podIP, pod.port));

  const agent = await startGateway(server, gateway);
  try {
    // Answered by the server at the pod's address there (the only one on that port).
    assert.match(await readAll(podIP, pod.port), /^pod answered 127\./);
    gateway.setRemoteAddress(spec, undefined);
    await assert.rejects(readAll(podIP, pod.port));
  } finally {
    await agent.stop();
    await gateway.detach(spec);
  }
});

Deno.test("a call to a gateway port from a pod's address reaches the Service, which sees the pod's IP here", async () => {
  await using backend = sourceEcho("127.0.0.1", "backend saw");
  const services = new ListedServices();
  services.set([{
    namespace: "team",
    name: "api",
    clusterIP: "127.0.0.1",
    ports: [{ port: backend.port, protocol: "TCP" }],
  }]);
  const network = loopbackPodsNetwork(61);
  await using server = await startTunnelServer(network, services);
  const gateway = await server.host.gateway();
  const spec = remotePod("web", "team", []);
  const { podIP } = await gateway.attach(spec);
  gateway.setRemoteAddress(spec, POD_ADDRESS);
  const gatewayPort = freePort(GATEWAY_ADDRESS);
  const agent = await startGateway(server, gateway);
  try {
    gateway.setServices([{ namespace: "team", name: "api", port: backend.port, gatewayPort }]);
    const answer = await eventually(
      "the gateway's listener",
      () => readAll(GATEWAY_ADDRESS, gatewayPort, POD_ADDRESS),
      10_000,
    );
    assert.equal(answer, `backend saw ${podIP}`);
    assert.deepEqual(network.dials, [`${podIP}>127.0.0.1:${backend.port}`]);

    // The list changes: the gateway closes the port.
    gateway.setServices([]);
    await eventually("the gateway's port closed", async () => {
      try {
        await readAll(GATEWAY_ADDRESS, gatewayPort, POD_ADDRESS);
        return false;
      } catch {
        return true;
      }
    }, 10_000);
  } finally {
    await agent.stop();
    await gateway.detach(spec);
  }
});

Deno.test("a restarted tunnel host keeps the gateway's credential and its pods' IPs, and forgets gone pods", async () => {
  const stateDir = await Deno.makeTempDir({ prefix: "vk-gateway-state-" });
  try {
    const first = await startTunnelServer(loopbackPodsNetwork(61), new ListedServices(), {
      stateDir,
    });
    const before = await first.host.gateway();
    const kept = remotePod("kept", "team", []);
    const gone = remotePod("gone", "team", []);
    const agentPod = remotePod("job", "team", []);
    const { podIP } = await before.attach(kept);
    await before.attach(gone);
    await first.host.attach(agentPod);
    await first[Symbol.asyncDispose]();

    await using second = await startTunnelServer(loopbackPodsNetwork(61), new ListedServices(), {
      stateDir,
    });
    const after = await second.host.gateway({ credential: before.agentCredential });
    assert.equal(after.agentCredential, before.agentCredential, "the kept credential is returned");
    assert.deepEqual(await after.reattach(kept), { podIP, podIPs: [podIP] });
    await after.adopted([kept]);
    const files = [];
    for await (const e of Deno.readDir(stateDir)) files.push(e.name);
    assert.deepEqual(
      files.sort(),
      ["_gateway.json", "uid-job.json", "uid-kept.json"],
      "the gone gateway pod's state is removed; the agent pod's is not the gateway's to forget",
    );
    // The gateway dials the restarted host with the credential it had.
    const session = new MuxSession(
      await dialTunnel({
        server: new URL(second.url),
        caPem: second.caPem,
        credential: before.agentCredential,
      }),
      { client: true },
    );
    session.close();
    await session.closed;
    await after.detach(kept);
    await second.host.detach(agentPod);
  } finally {
    await Deno.remove(stateDir, { recursive: true });
  }
});

Deno.test("start-up's node tunnel runs the gateway as the file's program with agent --gateway, and pods are reached through it", async () => {
  await using pod = sourceEcho(POD_ADDRESS, "pod answered");
  await using node = await startTunnelNode(loopbackPodsNetwork(64), new ListedServices(), [
    "/shared/vkubelet",
  ]);
  const gateway = await node.tunnel.gateway();
  const [program, ...args] = gateway.agentCommand;
  assert.equal(program, "/shared/vkubelet");
  assert.deepEqual(args.slice(0, 2), ["agent", "--gateway"]);
  assert.ok(!args.some((a) => a.includes(gateway.agentCredential)), "no credential in argv");
  const parsed = await parseAgentArgs([...args.slice(1), `--listen-address=${GATEWAY_ADDRESS}`], {
    VKUBELET_AGENT_CREDENTIAL: gateway.agentCredential,
  });
  assert.ok(!("problems" in parsed), JSON.stringify(parsed));
  assert.equal(parsed.gateway, true);
  assert.equal(parsed.listenAddress, GATEWAY_ADDRESS);

  const spec = remotePod("web", "team", [pod.port]);
  const { podIP } = await gateway.attach(spec);
  gateway.setRemoteAddress(spec, POD_ADDRESS);
  const stop = new AbortController();
  const ready = Promise.withResolvers<void>();
  const running = runAgent(
    { ...parsed, log: () => {}, onReady: () => ready.resolve() },
    stop.signal,
  );
  try {
    await ready.promise;
    assert.match(await readAll(podIP, pod.port), /^pod answered /);
  } finally {
    stop.abort();
    await running;
    await gateway.detach(spec);
  }
});

Deno.test("the gateway agent refuses a pod agent's file options, and a pod's agent the gateway's", async () => {
  const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  const common = ["--server=https://127.0.0.1:10250", `--ca-base64=${btoa(pem)}`];
  const env = { VKUBELET_AGENT_CREDENTIAL: "vkg1.gateway.secret" };
  const gateway = await parseAgentArgs([...common, "--gateway", "--hosts-file=/tmp/h"], env);
  assert.ok("problems" in gateway);
  assert.match(gateway.problems.join("\n"), /--hosts-file is a pod's agent's/);
  const pod = await parseAgentArgs([...common, "--listen-address=127.0.0.1"], env);
  assert.ok("problems" in pod);
  assert.match(pod.problems.join("\n"), /--listen-address is a gateway's/);
});

Deno.test("a caller that half-closes after its request gets the whole answer, both ways through the gateway", async () => {
  await using backend = untilEofEcho("127.0.0.1", "backend read");
  await using pod = untilEofEcho(POD_ADDRESS, "pod read");
  const services = new ListedServices();
  services.set([{
    namespace: "team",
    name: "api",
    clusterIP: "127.0.0.1",
    ports: [{ port: backend.port, protocol: "TCP" }],
  }]);
  await using server = await startTunnelServer(loopbackPodsNetwork(61), services);
  const gateway = await server.host.gateway();
  const spec = remotePod("web", "team", [pod.port]);
  const { podIP } = await gateway.attach(spec);
  gateway.setRemoteAddress(spec, POD_ADDRESS);
  const gatewayPort = freePort(GATEWAY_ADDRESS);
  const agent = await startGateway(server, gateway);
  try {
    gateway.setServices([{ namespace: "team", name: "api", port: backend.port, gatewayPort }]);
    const out = await eventually(
      "the gateway's listener",
      () => readAll(GATEWAY_ADDRESS, gatewayPort, POD_ADDRESS, "hello"),
      10_000,
    );
    assert.equal(out, `backend read 5 from ${podIP}`);
    assert.match(await readAll(podIP, pod.port, undefined, "hello"), /^pod read 5 from 127\./);
  } finally {
    await agent.stop();
    await gateway.detach(spec);
  }
});

Deno.test("two gateways at once (a rolling update) are both served, the newest with the pods' connections", async () => {
  await using pod = sourceEcho(POD_ADDRESS, "pod answered");
  await using backend = sourceEcho("127.0.0.1", "backend saw");
  const services = new ListedServices();
  services.set([{
    namespace: "team",
    name: "api",
    clusterIP: "127.0.0.1",
    ports: [{ port: backend.port, protocol: "TCP" }],
  }]);
  await using server = await startTunnelServer(loopbackPodsNetwork(61), services);
  const gateway = await server.host.gateway();
  const spec = remotePod("web", "team", [pod.port]);
  const { podIP } = await gateway.attach(spec);
  gateway.setRemoteAddress(spec, POD_ADDRESS);
  const gatewayPort = freePort("127.0.62.1");
  gateway.setServices([{ namespace: "team", name: "api", port: backend.port, gatewayPort }]);
  const oldLogs: string[] = [];
  const old = await startGateway(server, gateway, "127.0.62.1", oldLogs);
  const next = await startGateway(server, gateway, "127.0.62.2");
  try {
    for (const address of ["127.0.62.1", "127.0.62.2"]) {
      const answer = await eventually(
        `the gateway on ${address}`,
        () => readAll(address, gatewayPort, POD_ADDRESS),
        10_000,
      );
      assert.equal(answer, `backend saw ${podIP}`);
    }
    assert.match(await readAll(podIP, pod.port), /^pod answered /);
    await next.stop();
    // The old gateway takes over once the host has seen the new one's session end.
    assert.match(
      await eventually("the old gateway", () => readAll(podIP, pod.port), 10_000),
      /^pod answered /,
    );
    assert.deepEqual(oldLogs.filter((l) => /closed|reconnect/.test(l)), [], "the old one stayed");
  } finally {
    await old.stop();
    await gateway.detach(spec);
  }
});
