/**
 * The pod network tunnel against a direct connection on one host: an echo "pod" on
 * 127.0.0.1, reached directly, and through vkubelet's tunnel (the kubelet API with the tunnel
 * host on 127.0.0.1, the pod IP standing in as 127.0.0.2, `vkubelet agent` as a child process
 * dialing in over TLS). Prints MB/s of a bulk echo, the median round trip of 1-byte messages
 * (and what the tunnel adds), and the CPU this process (vkubelet's side, plus the client and
 * the echo that the direct run also has) spends per MB, direct run subtracted. No assertion.
 * Run: `deno run -A bench/scenarios/tunnel.ts [mb=64] [rounds=1000]`.
 * @module
 */
import process from "node:process";
import {
  ListedServices,
  loopbackNetwork,
  remotePod,
  startTunnelServer,
} from "../../tools/tunnel/server.ts";

const mb = Number(Deno.args[0] ?? 64);
const rounds = Number(Deno.args[1] ?? 1000);

const echo = Deno.listen({ hostname: "127.0.0.1", port: 0 });
void (async () => {
  for await (const conn of echo) void conn.readable.pipeTo(conn.writable).catch(() => {});
})().catch(() => {});

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

async function bulk(hostname: string, port: number): Promise<{ mbps: number; cpu: number }> {
  const conn = await Deno.connect({ hostname, port });
  const chunk = new Uint8Array(64 * 1024);
  const total = mb * 1024 * 1024;
  const cpu0 = cpuMs();
  const start = performance.now();
  const reading = (async () => {
    let got = 0;
    for await (const c of conn.readable) {
      got += c.length;
      if (got >= total) break;
    }
    return got;
  })();
  const writer = conn.writable.getWriter();
  for (let sent = 0; sent < total; sent += chunk.length) await writer.write(chunk);
  const got = await reading;
  const seconds = (performance.now() - start) / 1000;
  const cpu = cpuMs() - cpu0;
  try {
    conn.close();
  } catch {
    // closed
  }
  if (got < total) throw new Error(`echo returned ${got} of ${total} bytes`);
  return { mbps: mb / seconds, cpu };
}

async function latency(hostname: string, port: number): Promise<number> {
  const conn = await Deno.connect({ hostname, port });
  conn.setNoDelay(true);
  const one = new Uint8Array(1);
  const buf = new Uint8Array(16);
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    await conn.write(one);
    await conn.read(buf);
    times.push(performance.now() - t);
  }
  conn.close();
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const port = (echo.addr as Deno.NetAddr).port;
await using server = await startTunnelServer(loopbackNetwork(), new ListedServices());
const attached = await server.host.attach(remotePod("bench", "default", [port]));
const agent = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", new URL("../../main.ts", import.meta.url).pathname, ...attached.agentArgs],
  env: { VKUBELET_AGENT_CREDENTIAL: attached.agentCredential },
  stdout: "null",
  stderr: "piped",
}).spawn();
try {
  // The agent is up once a connection to the pod IP is answered.
  for (let i = 0;; i++) {
    try {
      if (await latency("127.0.0.2", port) >= 0) break;
    } catch {
      if (i > 100) throw new Error("the agent did not connect within 20 s");
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const direct = await bulk("127.0.0.1", port);
  const tunnel = await bulk("127.0.0.2", port);
  const directRtt = await latency("127.0.0.1", port);
  const tunnelRtt = await latency("127.0.0.2", port);
  const perMb = (tunnel.cpu - direct.cpu) / mb;
  console.log(
    `bulk echo of ${mb} MB: direct ${direct.mbps.toFixed(0)} MB/s, ` +
      `tunnel ${tunnel.mbps.toFixed(0)} MB/s (${(tunnel.mbps / direct.mbps * 100).toFixed(0)} %)`,
  );
  console.log(
    `1-byte round trip (median of ${rounds}): direct ${(directRtt * 1000).toFixed(0)} µs, ` +
      `tunnel ${(tunnelRtt * 1000).toFixed(0)} µs (+${
        ((tunnelRtt - directRtt) * 1000).toFixed(0)
      } µs)`,
  );
  console.log(
    `CPU of this process: direct ${direct.cpu.toFixed(0)} ms, tunnel ${
      tunnel.cpu.toFixed(0)
    } ms; ` +
      `vkubelet's side ≈ ${perMb.toFixed(1)} ms per MB echoed (both directions)`,
  );
} finally {
  try {
    agent.kill("SIGTERM");
  } catch {
    // it exited already; its stderr says why
  }
  const status = await agent.status;
  if (status.code !== 0) console.error(`the agent exited ${status.code}`);
  await agent.stderr.pipeTo(Deno.stderr.writable, { preventClose: true }).catch(() => {});
  await server.host.detach(remotePod("bench", "default", [port]));
  echo.close();
}
