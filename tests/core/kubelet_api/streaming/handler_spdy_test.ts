/**
 * The streaming handler over SPDY/3.1 through the real kubelet API server (node:https on
 * 127.0.0.1) and the mock provider: exec, attach, port-forward, refusals before the upgrade,
 * timeouts, and hostile byte streams.
 */
import assert from "node:assert/strict";
import type { ContainerRef, ExecOptions, TerminalSize } from "../../../../provider/mod.ts";
import { spdyHeaders } from "../../../../spdy/headers.ts";
import type { SpdySession } from "../../../../spdy/session.ts";
import {
  connectTls,
  overrideProvider,
  rawUpgrade,
  readAll,
  spdyRequest,
  startHandlerServer,
} from "../../../../tools/harness/handler_server.ts";
import { spdyExec } from "./_spdy_exec_client.ts";
import { sha256 } from "./_memory_duplex.ts";

const sanitize = { sanitizeOps: true, sanitizeResources: true };
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

function pattern(length: number, seed = 0): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff);
}

Deno.test({
  name: "SPDY exec: echo prints, the status is Success, v4 is negotiated",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const result = await spdyExec(s.port, ["echo", "hi"]);
    assert.equal(result.protocol, "v4.channel.k8s.io");
    assert.equal(text(result.stdout), "hi\n");
    assert.deepEqual(JSON.parse(result.status), { metadata: {}, status: "Success" });
  },
});

Deno.test({
  name: "SPDY exec: cat round-trips 4 MiB byte-exact",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const input = pattern(4 << 20);
    const result = await spdyExec(s.port, ["cat"], { stdin: input });
    assert.equal(result.stdout.length, input.length);
    assert.equal(await sha256(result.stdout), await sha256(input));
  },
});

Deno.test({
  name: "SPDY exec: a non-zero exit is a NonZeroExitCode status; stderr is kept apart",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const exit = await spdyExec(s.port, ["sh", "-c", "exit 3"]);
    const status = JSON.parse(exit.status);
    assert.equal(status.reason, "NonZeroExitCode");
    assert.deepEqual(status.details.causes, [{ reason: "ExitCode", message: "3" }]);
    const missing = await spdyExec(s.port, ["nosuch"]);
    assert.equal(missing.stderr, "mock: nosuch: command not found\n");
    assert.equal(JSON.parse(missing.status).details.causes[0].message, "127");
  },
});

Deno.test({
  name: "SPDY exec on v1-v3: plain-text errors, nothing on success",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const ok = await spdyExec(s.port, ["true"], { protocols: ["v3.channel.k8s.io"] });
    assert.equal(ok.protocol, "v3.channel.k8s.io");
    assert.equal(ok.status, "");
    const failed = await spdyExec(s.port, ["false"], { protocols: ["v2.channel.k8s.io"] });
    assert.equal(failed.status, "command terminated with non-zero exit code: exit status 1");
  },
});

Deno.test({
  name: "SPDY exec with a TTY: the provider sees the terminal sizes",
  ...sanitize,
  async fn() {
    const seen: TerminalSize[] = [];
    await using s = await startHandlerServer({
      provider: (mock) =>
        overrideProvider(mock, {
          async runInContainer(_ref: ContainerRef, options: ExecOptions) {
            assert.equal(options.io.tty, true);
            assert.equal(options.io.stderr, undefined);
            for await (const size of options.io.resize!) {
              seen.push(size);
              if (seen.length === 2) break;
            }
            const writer = options.io.stdout!.getWriter();
            await writer.write(new TextEncoder().encode("sized\r\n"));
            writer.releaseLock();
            return 0;
          },
        }),
    });
    const result = await spdyExec(s.port, ["resize-probe"], {
      tty: true,
      stdin: new Uint8Array(0),
      holdStdin: true,
      resizes: [{ Width: 80, Height: 24 }, { Width: 120, Height: 40 }],
    });
    assert.equal(text(result.stdout), "sized\r\n");
    assert.deepEqual(seen, [{ width: 80, height: 24 }, { width: 120, height: 40 }]);
  },
});

Deno.test({
  name: "SPDY attach: the container's output and echoed stdin, then Success",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const result = await spdyExec(
      s.port,
      [],
      { stdin: new TextEncoder().encode("ping\n") },
      "attach",
    );
    assert.equal(text(result.stdout), "mock: attached to container app\nping\n");
    assert.equal(JSON.parse(result.status).status, "Success");
  },
});

Deno.test({
  name: "SPDY exec: a provider error becomes an InternalError status naming it",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    await s.mock.deletePod(s.mock.pods.get("default/web")!.pod, {});
    const result = await spdyExec(s.port, ["echo", "hi"]);
    const status = JSON.parse(result.status);
    assert.equal(status.reason, "InternalError");
    assert.match(status.message, /not found: pod default\/web is not running on this node/);
  },
});

Deno.test({
  name: "SPDY upgrade refusals: 400 without a protocol, 403 listing ours, 400 without streams",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const none = await rawUpgrade(
      s.port,
      spdyRequest("/exec/default/web/app?command=true&output=1", []),
    );
    assert.equal(none.status, 400);
    assert.match(none.body, /X-Stream-Protocol-Version is required/);
    const unknown = await rawUpgrade(
      s.port,
      spdyRequest("/exec/default/web/app?command=true&output=1", ["v9.channel.k8s.io"]),
    );
    assert.equal(unknown.status, 403);
    const accepted = unknown.headers.filter(([n]) => n === "x-accepted-stream-protocol-versions")
      .flatMap(([, v]) => v.split(",").map((p) => p.trim()));
    assert.deepEqual(accepted, [
      "v4.channel.k8s.io",
      "v3.channel.k8s.io",
      "v2.channel.k8s.io",
      "channel.k8s.io",
    ]);
    const noStreams = await rawUpgrade(
      s.port,
      spdyRequest("/exec/default/web/app?command=true", ["v4.channel.k8s.io"]),
    );
    assert.equal(noStreams.status, 400);
    assert.match(noStreams.body, /at least 1 of stdin, stdout, stderr/);
    const pf = await rawUpgrade(
      s.port,
      spdyRequest("/portForward/default/web", ["v4.channel.k8s.io"]),
    );
    assert.equal(pf.status, 403);
  },
});

Deno.test({
  name: "a provider without exec answers 501 before any upgrade",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer({
      provider: (mock) => overrideProvider(mock, { runInContainer: undefined }),
    });
    const res = await rawUpgrade(
      s.port,
      spdyRequest("/exec/default/web/app?command=true&output=1", ["v4.channel.k8s.io"]),
    );
    assert.equal(res.status, 501);
  },
});

Deno.test({
  name: "SPDY port-forward: 8 parallel connections of 512 KiB echo byte-exact",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const answer = await rawUpgrade(
      s.port,
      spdyRequest("/portForward/default/web", ["portforward.k8s.io"]),
    );
    assert.equal(answer.status, 101);
    const session = answer.session!;
    const sums = await Promise.all(
      Array.from(
        { length: 8 },
        (_, i) => forwardOnce(session, 8080 + i, String(i), pattern(512 << 10, i)),
      ),
    );
    for (const [i, sum] of sums.entries()) assert.equal(sum, await sha256(pattern(512 << 10, i)));
    session.close();
    await session.closed;
  },
});

/** One forwarded connection through `session`: sends `payload`, returns the echo's hash. */
async function forwardOnce(
  session: SpdySession,
  port: number,
  requestId: string,
  payload: Uint8Array,
): Promise<string> {
  const headers = (type: string) =>
    spdyHeaders({ streamtype: type, port: String(port), requestid: requestId });
  const error = await session.openStream(headers("error"));
  await error.closeWrite();
  const data = await session.openStream(headers("data"));
  const writing = (async () => {
    const writer = data.writable.getWriter();
    await writer.write(payload);
    await writer.close();
  })();
  const [echo, errorText] = await Promise.all([readAll(data.readable), readAll(error.readable)]);
  await writing;
  assert.equal(text(errorText), "");
  return await sha256(echo);
}

Deno.test({
  name: "SPDY port-forward: a bad port in the stream headers resets that stream only",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const answer = await rawUpgrade(
      s.port,
      spdyRequest("/portForward/default/web", ["portforward.k8s.io"]),
    );
    const session = answer.session!;
    await assert.rejects(
      session.openStream(spdyHeaders({ streamtype: "data", port: "99999", requestid: "1" })),
    );
    assert.equal(await forwardOnce(session, 80, "2", pattern(1000)), await sha256(pattern(1000)));
    session.close();
    await session.closed;
  },
});

Deno.test({
  name: "stream creation timeout: a client that opens no streams is disconnected",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer({ streamCreationTimeoutMs: 200 });
    const answer = await rawUpgrade(
      s.port,
      spdyRequest("/exec/default/web/app?command=true&output=1", ["v4.channel.k8s.io"]),
    );
    const started = Date.now();
    await answer.session!.closed;
    assert.ok(Date.now() - started < 5_000);
    await s.handler.drained();
    assert.equal(s.handler.activeSessions, 0);
  },
});

Deno.test({
  name: "stream idle timeout: a silent exec ends with a status naming the timeout",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer({ streamIdleTimeoutMs: 300 });
    const result = await spdyExec(s.port, ["sleep", "60"]);
    const status = JSON.parse(result.status);
    assert.equal(status.status, "Failure");
    assert.match(status.message, /stream idle timeout/);
  },
});

Deno.test({
  name: "malformed and truncated SPDY input closes that connection; the server carries on",
  ...sanitize,
  async fn() {
    await using s = await startHandlerServer();
    const garbage = await rawUpgrade(
      s.port,
      spdyRequest("/exec/default/web/app?command=true&output=1", ["v4.channel.k8s.io"]),
    );
    garbage.session!.close();
    await garbage.session!.closed;
    // Raw bytes instead of frames: a bad version, then a truncated frame.
    for (
      const bytes of [
        Uint8Array.of(0x80, 0x09, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0xff, 0xff),
        Uint8Array.of(0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x10),
      ]
    ) {
      const socket = await connectTls(s.port);
      socket.on("error", () => {});
      const closed = new Promise((resolve) => socket.on("close", resolve));
      socket.write(
        spdyRequest("/exec/default/web/app?command=true&output=1", ["v4.channel.k8s.io"])
          .join("\r\n") + "\r\n\r\n",
      );
      socket.write(bytes);
      socket.end();
      socket.resume();
      await closed;
    }
    await s.handler.drained();
    const result = await spdyExec(s.port, ["echo", "still here"]);
    assert.equal(text(result.stdout), "still here\n");
  },
});
