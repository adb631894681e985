import assert from "node:assert/strict";
import {
  negotiateSpdyUpgrade,
  parseRemoteCommandQuery,
  remoteCommandVersion,
} from "../../../../core/kubelet_api/streaming/negotiation.ts";
import {
  acceptRemoteCommand,
  encodeRemoteCommandStatus,
} from "../../../../core/kubelet_api/streaming/remote_command.ts";
import {
  decodeResizeMessages,
  latestResizes,
} from "../../../../core/kubelet_api/streaming/resize.ts";
import { SpdySession } from "../../../../spdy/session.ts";
import { spdyHeaders } from "../../../../spdy/headers.ts";
import { isRemoteCommandError, isSpdyStreamError } from "../../../../spdy/errors.ts";
import { FakeClock } from "../../../fakes/clock.ts";
import { memoryDuplexPair, readAll } from "./_memory_duplex.ts";

const KUBELET = ["v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"];
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

Deno.test("negotiation picks the client's first protocol the kubelet speaks", () => {
  const answer = negotiateSpdyUpgrade({
    connection: "Upgrade",
    upgrade: "SPDY/3.1",
    streamProtocolVersion: ["v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io"],
  }, KUBELET);
  assert.deepEqual(answer, {
    ok: true,
    status: 101,
    protocol: "v4.channel.k8s.io",
    headers: [
      ["Connection", "Upgrade"],
      ["Upgrade", "SPDY/3.1"],
      ["X-Stream-Protocol-Version", "v4.channel.k8s.io"],
    ],
  });
  const merged = negotiateSpdyUpgrade({
    connection: "keep-alive, Upgrade",
    upgrade: "spdy/3.1",
    streamProtocolVersion: "v2.channel.k8s.io, channel.k8s.io",
  }, KUBELET);
  assert.equal(merged.ok && merged.protocol, "v2.channel.k8s.io");
});

Deno.test("negotiation answers 400 without the header or upgrade, 403 listing what is accepted", () => {
  const missing = negotiateSpdyUpgrade({ connection: "Upgrade", upgrade: "SPDY/3.1" }, KUBELET);
  assert.equal(missing.status, 400);
  const blank = negotiateSpdyUpgrade({ streamProtocolVersion: " , " }, KUBELET);
  assert.equal(blank.status, 400);
  const none = negotiateSpdyUpgrade({
    connection: "Upgrade",
    upgrade: "SPDY/3.1",
    streamProtocolVersion: "v9.channel.k8s.io",
  }, KUBELET);
  assert.equal(none.status, 403);
  assert.deepEqual(
    none.headers.filter(([name]) => name === "X-Accepted-Stream-Protocol-Versions").map(([, v]) =>
      v
    ),
    KUBELET,
  );
  const notUpgrade = negotiateSpdyUpgrade({ streamProtocolVersion: "v4.channel.k8s.io" }, KUBELET);
  assert.equal(notUpgrade.status, 400);
  assert.ok(!notUpgrade.ok && notUpgrade.body.includes("missing upgrade headers"));
});

Deno.test("query options: flags are on only for 1, a TTY drops stderr, no stream is a 400", () => {
  const parsed = parseRemoteCommandQuery(
    new URLSearchParams("command=sh&command=-c&input=1&output=1&error=1&tty=1"),
  );
  assert.deepEqual(parsed, {
    ok: true,
    query: { command: ["sh", "-c"], stdin: true, stdout: true, stderr: false, tty: true },
  });
  assert.equal(parseRemoteCommandQuery(new URLSearchParams("output=true")).ok, false);
  assert.equal(remoteCommandVersion("v5.channel.k8s.io"), 5);
  assert.equal(remoteCommandVersion("channel.k8s.io"), 1);
  assert.equal(remoteCommandVersion("nope"), 0);
});

Deno.test("the v4 exit status is the exact metav1.Status JSON the kubelet writes", () => {
  assert.equal(
    text(encodeRemoteCommandStatus(4, { exitCode: 0 })),
    '{"metadata":{},"status":"Success"}',
  );
  assert.equal(
    text(encodeRemoteCommandStatus(4, { exitCode: 3 })),
    '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: ' +
      'exit status 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode",' +
      '"message":"3"}]}}',
  );
  assert.equal(
    text(encodeRemoteCommandStatus(5, { error: "no such container" })),
    '{"metadata":{},"status":"Failure","message":"Internal error occurred: no such container",' +
      '"reason":"InternalError","details":{"causes":[{"message":"no such container"}]},"code":500}',
  );
  assert.throws(() => encodeRemoteCommandStatus(4, { exitCode: 256 }), RangeError);
});

Deno.test("v1 to v3 write nothing on success and the plain message on failure", () => {
  assert.equal(encodeRemoteCommandStatus(3, { exitCode: 0 }).length, 0);
  assert.equal(
    text(encodeRemoteCommandStatus(2, { exitCode: 7 })),
    "command terminated with non-zero exit code: exit status 7",
  );
  assert.equal(
    text(encodeRemoteCommandStatus(1, { error: "boom" })),
    "Internal error occurred: boom",
  );
});

function bytesOf(...parts: string[]): ReadableStream<Uint8Array> {
  return ReadableStream.from(parts.map((p) => new TextEncoder().encode(p)));
}

Deno.test("resize messages are read from a stream of JSON objects, split anywhere", async () => {
  const sizes = await Array.fromAsync(
    decodeResizeMessages(bytesOf('{"Width":80,"Hei', 'ght":24}\n{"Width":120,', '"Height":40}\n')),
  );
  assert.deepEqual(sizes, [{ width: 80, height: 24 }, { width: 120, height: 40 }]);
  const stopped = await Array.fromAsync(
    decodeResizeMessages(bytesOf('{"Width":1,"Height":2}', "garbage", '{"Width":3,"Height":4}')),
  );
  assert.deepEqual(stopped, [{ width: 1, height: 2 }], "reading stops at the first bad message");
  const tooBig = await Array.fromAsync(decodeResizeMessages(bytesOf('{"Width":70000,"Height":1}')));
  assert.deepEqual(tooBig, []);
});

Deno.test("resizes nobody reads yet are coalesced to the latest, read as they arrive", async () => {
  let pulled = 0;
  const sizes = Array.from({ length: 500 }, (_, i) => `{"Width":${i + 1},"Height":9}`);
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled === sizes.length) return controller.close();
      controller.enqueue(new TextEncoder().encode(sizes[pulled++]));
    },
  }, { highWaterMark: 0 });
  const latest = latestResizes(source);
  // The source is drained without anyone iterating (an unread SPDY stream would back up).
  for (let i = 0; i < 50 && pulled < sizes.length; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.equal(pulled, sizes.length);
  assert.deepEqual(await Array.fromAsync(latest), [{ width: 500, height: 9 }]);
});

function sessions() {
  const [a, b] = memoryDuplexPair();
  return {
    client: new SpdySession(a, { role: "client" }),
    server: new SpdySession(b, { role: "server" }),
  };
}

Deno.test("streams are collected by streamtype in any order, then the exit code ends the exchange", async () => {
  const { client, server } = sessions();
  const accepting = acceptRemoteCommand(server, {
    protocol: "v4.channel.k8s.io",
    expectStdin: true,
    expectStdout: true,
    expectStderr: true,
    tty: false,
    lingerMs: 1000,
  });
  const open = (type: string) => client.openStream(spdyHeaders({ streamtype: type }));
  const stdout = await open("stdout");
  // Streams nobody would read are refused, so what the client sends on them is not kept.
  const refused = (err: unknown) => isSpdyStreamError(err) && err.code === "reset_by_peer";
  await assert.rejects(open("bogus"), refused);
  await assert.rejects(open("stdout"), refused, "a second stdout");
  const error = await open("error");
  const stderr = await open("stderr");
  const stdin = await open("stdin");
  const command = await accepting;
  assert.equal(command.resize, undefined);
  await assert.rejects(open("stdin"), refused, "a stream opened after the set-up");
  const echo = command.stdin!.pipeTo(command.stdout!);
  const writer = stdin.writable.getWriter();
  await writer.write(new TextEncoder().encode("hello"));
  await writer.close();
  const outputs = Promise.all([
    readAll(stdout.readable),
    readAll(stderr.readable),
    readAll(error.readable),
  ]);
  await echo;
  const finished = command.finish({ exitCode: 3 });
  const [out, err, status] = await outputs;
  assert.equal(text(out), "hello");
  assert.equal(err.length, 0);
  assert.equal(JSON.parse(text(status)).details.causes[0].message, "3");
  client.close();
  await finished;
  await Promise.all([client.closed, server.closed]);
});

Deno.test("a client that never creates its streams times out and the session closes", async () => {
  const clock = new FakeClock();
  const { client, server } = sessions();
  const accepting = acceptRemoteCommand(server, {
    protocol: "v3.channel.k8s.io",
    expectStdin: false,
    expectStdout: true,
    expectStderr: false,
    tty: true,
    clock,
  }).catch((err) => err);
  await client.openStream(spdyHeaders({ streamtype: "error" }));
  await clock.advance(29_999);
  assert.ok(!server.isClosed, "still waiting just before the timeout");
  await clock.advance(1);
  const err = await accepting;
  assert.ok(isRemoteCommandError(err) && err.code === "stream_timeout", String(err));
  await server.closed;
  await client.closed;
});
