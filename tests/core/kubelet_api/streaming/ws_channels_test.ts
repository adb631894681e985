import assert from "node:assert/strict";
import {
  chooseWebSocketProtocol,
  decodeChannelMessage,
  encodeChannelMessage,
  encodePortPrefix,
  encodeStatusMessage,
  isSpdyTunnelProtocol,
  isWsChannelError,
  portForwardChannels,
  readinessChannel,
  wsProtocolInfo,
} from "../../../../core/kubelet_api/streaming/ws_channels.ts";

const v1 = wsProtocolInfo("channel.k8s.io")!;
const b64 = wsProtocolInfo("base64.channel.k8s.io")!;
const v4 = wsProtocolInfo("v4.channel.k8s.io")!;
const v5 = wsProtocolInfo("v5.channel.k8s.io")!;

Deno.test("the client's first supported sub-protocol wins; no offer means the empty protocol", () => {
  assert.equal(chooseWebSocketProtocol("v5.channel.k8s.io"), "v5.channel.k8s.io");
  assert.equal(
    chooseWebSocketProtocol(["v4.channel.k8s.io, v5.channel.k8s.io"]),
    "v4.channel.k8s.io",
  );
  assert.equal(
    chooseWebSocketProtocol("base64.channel.k8s.io,channel.k8s.io"),
    "base64.channel.k8s.io",
  );
  assert.equal(chooseWebSocketProtocol(null), "");
  assert.equal(chooseWebSocketProtocol("v9.channel.k8s.io"), undefined);
  assert.equal(chooseWebSocketProtocol("v5.channel.k8s.io", ["v4.channel.k8s.io"]), undefined);
  assert.equal(wsProtocolInfo("v6.channel.k8s.io"), undefined);
});

Deno.test("binary messages are a channel byte and the payload", () => {
  assert.deepEqual(
    encodeChannelMessage(v4, 1, Uint8Array.of(104, 105)),
    Uint8Array.of(1, 104, 105),
  );
  assert.deepEqual(decodeChannelMessage(v4, Uint8Array.of(0, 97, 98), 5), {
    kind: "data",
    channel: 0,
    payload: Uint8Array.of(97, 98),
  });
});

Deno.test("base64 messages are an ASCII digit and base64 text, both ways", () => {
  assert.equal(encodeChannelMessage(b64, 2, new TextEncoder().encode("oops")), "2b29wcw==");
  assert.deepEqual(decodeChannelMessage(b64, "0aGk=", 5), {
    kind: "data",
    channel: 0,
    payload: new TextEncoder().encode("hi"),
  });
  assert.equal(decodeChannelMessage(b64, "0!!!", 5).kind, "ignore");
});

Deno.test("v5 CLOSE signals half-close a channel; malformed ones are protocol errors", () => {
  assert.deepEqual(decodeChannelMessage(v5, Uint8Array.of(255, 0), 5), {
    kind: "close",
    channel: 0,
  });
  assert.throws(() => decodeChannelMessage(v5, Uint8Array.of(255), 5), isWsChannelError);
  assert.throws(() => decodeChannelMessage(v5, Uint8Array.of(255, 0, 0), 5), isWsChannelError);
  assert.throws(() => decodeChannelMessage(v5, Uint8Array.of(255, 9), 5), isWsChannelError);
  // Before v5, 255 is just a channel that does not exist.
  assert.equal(decodeChannelMessage(v4, Uint8Array.of(255, 0), 5).kind, "ignore");
});

Deno.test("empty messages and unknown channels are ignored, as upstream does", () => {
  assert.equal(decodeChannelMessage(v1, new Uint8Array(0), 5).kind, "ignore");
  assert.equal(decodeChannelMessage(v1, Uint8Array.of(7, 1), 5).kind, "ignore");
});

Deno.test("the exit status goes on channel 3: Status JSON on v4/v5, text on v1, nothing on v1 success", () => {
  const json = encodeStatusMessage(v5, { exitCode: 42 }) as Uint8Array;
  assert.equal(json[0], 3);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(json.subarray(1))).details, {
    causes: [{ reason: "ExitCode", message: "42" }],
  });
  assert.equal(encodeStatusMessage(v1, { exitCode: 0 }), undefined);
  const text = encodeStatusMessage(b64, { error: "boom" }) as string;
  assert.equal(text[0], "3");
  assert.equal(atob(text.slice(1)), "Internal error occurred: boom");
});

Deno.test("readiness goes to the lowest writable channel; port-forward channels pair up", () => {
  assert.equal(readinessChannel({ stdout: true, stderr: true }), 1);
  assert.equal(readinessChannel({ stdout: false, stderr: true }), 2);
  assert.equal(readinessChannel({ stdout: false, stderr: false }), 3);
  assert.deepEqual(portForwardChannels(1), { data: 2, error: 3 });
  assert.deepEqual(encodePortPrefix(8080), Uint8Array.of(0x90, 0x1f));
  assert.throws(() => encodePortPrefix(0), RangeError);
  assert.ok(isSpdyTunnelProtocol("SPDY/3.1+portforward.k8s.io"));
  assert.ok(!isSpdyTunnelProtocol("v4.channel.k8s.io"));
});
