/**
 * The streaming handler over WebSocket through the real kubelet API server and the mock:
 * exec/attach on every channel protocol, the v5 CLOSE signal, resizes on channel 4,
 * port-forward on channels and through the SPDY tunnel, refusals, and bad messages.
 */
import assert from "node:assert/strict";
// @ts-types="@types/ws"
import type { WebSocket } from "ws";
import type { ContainerRef, ExecOptions, TerminalSize } from "../../../../provider/mod.ts";
import { spdyHeaders } from "../../../../spdy/headers.ts";
import { SpdySession } from "../../../../spdy/session.ts";
import {
  concat,
  openWebSocket,
  overrideProvider,
  rawUpgrade,
  readAll,
  spdyRequest,
  startHandlerServer,
} from "../../../../tools/harness/handler_server.ts";
import { sha256 } from "./_memory_duplex.ts";
import { rawWebSocket } from "./_raw_ws_client.ts";
import { chooseWsProtocol } from "../../../../core/kubelet_api/streaming/ws_serve.ts";

const sanitize = { sanitizeOps: true, sanitizeResources: true };
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Everything a WebSocket exec session sent, per channel, until the server closed. */
interface Transcript {
  channels: Map<number, Uint8Array>;
  /** Channel of the first message (the readiness signal). */
  first?: { channel: number; length: number };
  closeCode: number;
}

function transcript(ws: WebSocket, base64 = false): Promise<Transcript> {
  const chunks = new Map<number, Uint8Array[]>();
  let first: Transcript["first"];
  ws.on("message", (data: Uint8Array, isBinary: boolean) => {
    let channel: number, payload: Uint8Array;
    if (base64) {
      assert.equal(isBinary, false);
      const t = decoder.decode(data);
      channel = t.charCodeAt(0) - 0x30;
      payload = Uint8Array.from(atob(t.slice(1)), (c) => c.charCodeAt(0));
    } else {
      channel = data[0];
      payload = new Uint8Array(data.subarray(1));
    }
    first ??= { channel, length: payload.length };
    chunks.set(channel, [...chunks.get(channel) ?? [], payload]);
  });
  return new Promise((resolve) => {
    ws.on("close", (code: number) => {
      resolve({
        channels: new Map([...chunks].map(([c, parts]) => [c, concat(parts)])),
        first,
        closeCode: code,
      });
    });
  });
}

const channelText = (t: Transcript, channel: number) =>
  decoder.decode(t.channels.get(channel) ?? new Uint8Array(0));

function execPath(command: string[], flags: Record<string, string>, kind = "exec") {
  const query = new URLSearchParams(flags);
  for (const word of command) query.append("command", word);
  return `/${kind}/default/web/app?${query}`;
}

Deno.test({
  name: "WebSocket v5 exec: readiness message, stdout, Success status, close 1000",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const ws = await openWebSocket(s.port, execPath(["echo", "hi"], { output: "1", error: "1" }), [
      "v5.channel.k8s.io",
    ]);
    assert.equal(ws.protocol, "v5.channel.k8s.io");
    const t = await transcript(ws);
    assert.deepEqual(t.first, { channel: 1, length: 0 });
    assert.equal(channelText(t, 1), "hi\n");
    assert.deepEqual(JSON.parse(channelText(t, 3)), { metadata: {}, status: "Success" });
    assert.equal(t.closeCode, 1000);
  },
});

Deno.test({
  name: "WebSocket v5 exec: cat ends on the CLOSE signal; 2 MiB round-trip byte-exact",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const ws = await openWebSocket(
      s.port,
      execPath(["cat"], { input: "1", output: "1", error: "1" }),
      ["v5.channel.k8s.io"],
    );
    const done = transcript(ws);
    const input = Uint8Array.from({ length: 2 << 20 }, (_, i) => (i * 7) & 0xff);
    for (let at = 0; at < input.length; at += 100_000) {
      ws.send(concat([Uint8Array.of(0), input.subarray(at, at + 100_000)]));
    }
    ws.send(Uint8Array.of(255, 0));
    const t = await done;
    assert.equal(await sha256(t.channels.get(1)!), await sha256(input));
    assert.equal(JSON.parse(channelText(t, 3)).status, "Success");
  },
});

Deno.test({
  name: "WebSocket v4 exit codes, v4 base64 framing, v1 plain-text errors",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const v4 = await openWebSocket(s.port, execPath(["exit", "3"], { output: "1" }), [
      "v4.channel.k8s.io",
    ]);
    const status = JSON.parse(channelText(await transcript(v4), 3));
    assert.equal(status.reason, "NonZeroExitCode");
    assert.equal(status.details.causes[0].message, "3");

    const b64 = await openWebSocket(s.port, execPath(["echo", "hi"], { output: "1" }), [
      "v4.base64.channel.k8s.io",
    ]);
    const t64 = await transcript(b64, true);
    assert.equal(channelText(t64, 1), "hi\n");

    const v1 = await openWebSocket(s.port, execPath(["false"], { output: "1" }), [
      "channel.k8s.io",
    ]);
    assert.equal(
      channelText(await transcript(v1), 3),
      "command terminated with non-zero exit code: exit status 1",
    );
  },
});

Deno.test({
  name: "WebSocket exec with a TTY: channel 4 resizes reach the provider",
  ...sanitize,
  async fn() {
    const seen: TerminalSize[] = [];
    await using s = await startHandlerServer({
      provider: (mock) =>
        overrideProvider(mock, {
          async runInContainer(_ref: ContainerRef, options: ExecOptions) {
            // Sizes not yet read are coalesced: the last one always arrives.
            for await (const size of options.io.resize!) {
              seen.push(size);
              if (size.width === 132) break;
            }
            return 0;
          },
        }),
    });
    const ws = await openWebSocket(
      s.port,
      execPath(["probe"], { input: "1", output: "1", tty: "1" }),
      ["v5.channel.k8s.io"],
    );
    const done = transcript(ws);
    ws.send(concat([Uint8Array.of(4), encoder.encode('{"Width":80,"Height":24}')]));
    ws.send(concat([Uint8Array.of(4), encoder.encode('{"Width":132,"Height":50}')]));
    const t = await done;
    assert.equal(JSON.parse(channelText(t, 3)).status, "Success");
    assert.deepEqual(seen.at(-1), { width: 132, height: 50 });
    assert.ok(seen.length <= 2);
  },
});

Deno.test({
  name: "WebSocket exec: a flood of resizes the container does not read holds only the latest",
  ...sanitize,
  async fn() {
    const seen: TerminalSize[] = [];
    await using s = await startHandlerServer({
      provider: (mock) =>
        overrideProvider(mock, {
          async runInContainer(_ref: ContainerRef, options: ExecOptions) {
            // Read nothing until stdin says so; by then every resize has arrived.
            const reader = options.io.stdin!.getReader();
            await reader.read();
            reader.releaseLock();
            for await (const size of options.io.resize!) {
              seen.push(size);
              if (size.width === 1000) break;
            }
            return 0;
          },
        }),
    });
    const ws = await openWebSocket(
      s.port,
      execPath(["probe"], { input: "1", output: "1", tty: "1" }),
      ["v5.channel.k8s.io"],
    );
    const done = transcript(ws);
    for (let width = 1; width <= 1000; width++) {
      ws.send(concat([Uint8Array.of(4), encoder.encode(`{"Width":${width},"Height":24}`)]));
    }
    ws.send(concat([Uint8Array.of(0), encoder.encode("go\n")]));
    const t = await done;
    assert.equal(JSON.parse(channelText(t, 3)).status, "Success");
    assert.deepEqual(seen, [{ width: 1000, height: 24 }], "one size held, not 1000");
  },
});

Deno.test({
  name: "WebSocket exec: an oversized resize message ends resizes, the session carries on",
  ...sanitize,
  async fn() {
    let ended = false;
    await using s = await startHandlerServer({
      provider: (mock) =>
        overrideProvider(mock, {
          async runInContainer(_ref: ContainerRef, options: ExecOptions) {
            for await (const _ of options.io.resize!) { /* none expected */ }
            ended = true;
            return 0;
          },
        }),
    });
    const ws = await openWebSocket(
      s.port,
      execPath(["probe"], { input: "1", output: "1", tty: "1" }),
      ["v5.channel.k8s.io"],
    );
    const done = transcript(ws);
    ws.send(concat([Uint8Array.of(4), new Uint8Array(1 << 20).fill(0x20)]));
    const t = await done;
    assert.equal(JSON.parse(channelText(t, 3)).status, "Success");
    assert.ok(ended);
  },
});

Deno.test({
  name: "WebSocket attach: greeting and echo until the CLOSE signal",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const ws = await openWebSocket(s.port, execPath([], { input: "1", output: "1" }, "attach"), [
      "v5.channel.k8s.io",
    ]);
    const done = transcript(ws);
    ws.send(concat([Uint8Array.of(0), encoder.encode("hello\n")]));
    ws.send(Uint8Array.of(255, 0));
    const t = await done;
    assert.equal(channelText(t, 1), "mock: attached to container app\nhello\n");
  },
});

Deno.test({
  name: "WebSocket refusals: unknown sub-protocols and missing ports answer 400 before upgrading",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    await assert.rejects(
      openWebSocket(s.port, execPath(["true"], { output: "1" }), ["v9.channel.k8s.io"]),
      /HTTP 400/,
    );
    await assert.rejects(
      openWebSocket(s.port, "/portForward/default/web", ["v4.channel.k8s.io"]),
      /HTTP 400/,
    );
  },
});

Deno.test({
  name: "WebSocket v5: a malformed CLOSE signal closes the connection; the server carries on",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const ws = await openWebSocket(
      s.port,
      execPath(["cat"], { input: "1", output: "1" }),
      ["v5.channel.k8s.io"],
    );
    const done = transcript(ws);
    ws.send(Uint8Array.of(255, 0, 1));
    const t = await done;
    assert.notEqual(t.closeCode, 1000);
    const again = await openWebSocket(s.port, execPath(["echo", "ok"], { output: "1" }), [
      "v5.channel.k8s.io",
    ]);
    assert.equal(channelText(await transcript(again), 1), "ok\n");
  },
});

Deno.test({
  name: "WebSocket v4 port-forward: port prefixes on both channels, then an echo",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const ws = await openWebSocket(s.port, "/portForward/default/web?port=8080,9090", [
      "v4.channel.k8s.io",
    ]);
    const done = transcript(ws);
    const first = new Map<number, Uint8Array>();
    ws.on("message", (data: Uint8Array) => {
      if (!first.has(data[0])) first.set(data[0], new Uint8Array(data.subarray(1)));
    });
    ws.send(concat([Uint8Array.of(0), encoder.encode("to 8080")]));
    ws.send(concat([Uint8Array.of(2), encoder.encode("to 9090")]));
    await new Promise((r) => setTimeout(r, 200));
    ws.close(1000);
    const t = await done;
    assert.deepEqual([...first.get(0)!], [0x90, 0x1f]);
    assert.deepEqual([...first.get(1)!], [0x90, 0x1f]);
    assert.deepEqual([...first.get(2)!], [0x82, 0x23]);
    assert.deepEqual([...first.get(3)!], [0x82, 0x23]);
    assert.equal(decoder.decode(t.channels.get(0)!.subarray(2)), "to 8080");
    assert.equal(decoder.decode(t.channels.get(2)!.subarray(2)), "to 9090");
  },
});

Deno.test({
  name: "WebSocket SPDY tunnel port-forward: parallel connections echo byte-exact",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const tunnel = await rawWebSocket(
      s.port,
      "/portForward/default/web",
      "SPDY/3.1+portforward.k8s.io",
    );
    assert.equal(tunnel.protocol, "SPDY/3.1+portforward.k8s.io");
    const session = new SpdySession(tunnel.duplex, { role: "client" });
    const sizes = [300_000, 1, 70_000, 1 << 20];
    await Promise.all(sizes.map(async (size, i) => {
      const payload = Uint8Array.from({ length: size }, (_, j) => (j + i) & 0xff);
      const headers = (type: string) =>
        spdyHeaders({ streamtype: type, port: "80", requestid: String(i) });
      const error = await session.openStream(headers("error"));
      await error.closeWrite();
      const data = await session.openStream(headers("data"));
      const writer = data.writable.getWriter();
      const writing = writer.write(payload).then(() => writer.close());
      const echo = await readAll(data.readable);
      await writing;
      assert.equal(decoder.decode(await readAll(error.readable)), "");
      assert.equal(await sha256(echo), await sha256(payload));
    }));
    session.close();
    await session.closed;
    await new Promise((resolve) => tunnel.socket.once("close", resolve));
  },
});

Deno.test({
  name: "WebSocket idle timeout: a silent exec gets a status naming the timeout, then close",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer({ streamIdleTimeoutMs: 300 });
    const ws = await openWebSocket(s.port, execPath(["sleep", "60"], { output: "1" }), [
      "v5.channel.k8s.io",
    ]);
    const t = await transcript(ws);
    assert.match(JSON.parse(channelText(t, 3)).message, /stream idle timeout/);
    assert.equal(t.closeCode, 1000);
  },
});

Deno.test({
  name: "a client that vanishes mid-command ends the session; nothing is left running",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const ws = await openWebSocket(s.port, execPath(["sleep", "60"], { output: "1" }), [
      "v5.channel.k8s.io",
    ]);
    await new Promise((r) => setTimeout(r, 50));
    const closed = new Promise((resolve) => ws.once("close", resolve));
    ws.terminate();
    await closed;
    const spdy = await rawUpgrade(
      s.port,
      spdyRequest("/exec/default/web/app?command=sleep&command=60&output=1", [
        "v4.channel.k8s.io",
      ]),
    );
    await spdy.session!.openStream(spdyHeaders({ streamtype: "error" }));
    await spdy.session!.openStream(spdyHeaders({ streamtype: "stdout" }));
    await new Promise((r) => setTimeout(r, 50));
    spdy.socket.destroy();
    await spdy.session!.closed;
    await s.handler.drained();
    assert.equal(s.handler.activeSessions, 0);
  },
});

Deno.test("a refused WebSocket sub-protocol offer is not echoed with its bearer token", async () => {
  const token = btoa("secret-token-value").replace(/=+$/, "");
  const answer = chooseWsProtocol(
    new Request("https://node/exec/default/web/app", {
      headers: {
        "sec-websocket-protocol":
          `v9.channel.k8s.io, base64url.bearer.authorization.k8s.io.${token}`,
      },
    }),
    ["v5.channel.k8s.io"],
  );
  assert.ok(answer instanceof Response);
  assert.equal(answer.status, 400);
  const body = await answer.text();
  assert.ok(!body.includes(token), body);
  assert.match(
    body,
    /client supports \[v9\.channel\.k8s\.io base64url\.bearer\.authorization\.k8s\.io\.…\]/,
  );
});
