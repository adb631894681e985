/**
 * Seeded fuzzing of the WebSocket side with a time budget: the channel and resize decoders on
 * random and mutated messages, and hostile WebSocket sessions (valid, mutated and oversized
 * frames on every channel protocol) against the real kubelet API server. Each may end only in
 * a known way; every session must be closed by the server; the server must serve afterwards.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  decodeChannelMessage,
  isWsChannelError,
  WS_EXEC_PROTOCOLS,
  wsProtocolInfo,
} from "../../../../core/kubelet_api/streaming/ws_channels.ts";
import { ResizeDecoder } from "../../../../core/kubelet_api/streaming/resize.ts";
import { forBudget, fuzzBudgetMs, type Random, random } from "../../../fakes/fuzz.ts";
import {
  openWebSocket,
  rawUpgrade,
  startHandlerServer,
} from "../../../../tools/harness/handler_server.ts";

const encoder = new TextEncoder();
const PROTOCOLS = WS_EXEC_PROTOCOLS.filter((p) => p !== "");

function bytes(rng: Random, max: number): Uint8Array {
  return Uint8Array.from({ length: rng.int(max) }, () => rng.int(256));
}

/** A client message: a channel byte (or the CLOSE signal) and a payload, or noise. */
function channelMessage(rng: Random, base64: boolean): Uint8Array {
  const kind = rng.int(6);
  if (kind === 0) return bytes(rng, 64);
  if (kind === 1) return Uint8Array.of(255, rng.int(7));
  const channel = rng.int(6);
  const payload = kind === 2
    ? encoder.encode(`{"Width":${rng.int(70_000)},"Height":${rng.int(300)}}`.slice(0, rng.int(40)))
    : bytes(rng, 300);
  if (!base64) return Uint8Array.of(channel, ...payload);
  return encoder.encode(
    String.fromCharCode(0x30 + channel) + btoa(String.fromCharCode(...payload)),
  );
}

function mutate(message: Uint8Array, rng: Random): Uint8Array {
  const out = message.slice();
  for (let i = 0, n = 1 + rng.int(4); i < n && out.length > 0; i++) {
    out[rng.int(out.length)] ^= 1 << rng.int(8);
  }
  return rng.int(3) === 0 ? out.subarray(0, rng.int(out.length + 1)) : out;
}

Deno.test("10 s of random and mutated channel and resize messages decode or fail cleanly", async () => {
  const seed = 0xc4a77e1;
  const rng = random(seed);
  let data = 0, closes = 0, ignored = 0, refused = 0, sizes = 0;
  const count = await forBudget(fuzzBudgetMs(10), (i) => {
    const info = wsProtocolInfo(PROTOCOLS[rng.int(PROTOCOLS.length)])!;
    const message = channelMessage(rng, info.base64);
    const input = rng.int(2) === 0 ? mutate(message, rng) : message;
    try {
      const decoded = decodeChannelMessage(info, input, 5);
      if (decoded.kind === "data") data++;
      else if (decoded.kind === "close") closes++;
      else ignored++;
    } catch (err) {
      assert.ok(isWsChannelError(err), `seed ${seed} message ${i} threw ${err}`);
      refused++;
    }
    const resize = new ResizeDecoder();
    for (let piece = 0; piece < 4; piece++) {
      const got = resize.push(rng.int(2) === 0 ? mutate(channelMessage(rng, false), rng) : input);
      sizes += got?.length ?? 0;
      if (!got) break;
    }
  });
  console.log(
    `fuzz: seed ${seed}, ${count} messages: ${data} data, ${closes} close, ${ignored} ignored, ` +
      `${refused} refused; ${sizes} sizes decoded`,
  );
  assert.ok(data > 100 && refused > 100 && ignored > 100, "the corpus exercises every outcome");
});

/** One WebSocket frame from the client: masked unless `unmasked`. */
function frame(
  opcode: number,
  payload: Uint8Array,
  options: { fin?: boolean; unmasked?: boolean } = {},
) {
  const n = payload.length;
  const first = ((options.fin ?? true) ? 0x80 : 0) | opcode;
  const maskBit = options.unmasked ? 0 : 0x80;
  const head = n < 126
    ? [first, maskBit | n]
    : n < 65536
    ? [first, maskBit | 126, n >> 8, n & 0xff]
    : [first, maskBit | 127, 0, 0, 0, 0, n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
  const mask = options.unmasked ? [] : [1, 2, 3, 4];
  const body = payload.map((b, i) => options.unmasked ? b : b ^ mask[i & 3]);
  return Uint8Array.from([...head, ...mask, ...body]);
}

/** A hostile client's bytes after the upgrade. */
function hostileFrames(rng: Random, base64: boolean): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (let i = 0, n = 1 + rng.int(12); i < n; i++) {
    const message = channelMessage(rng, base64);
    switch (rng.int(10)) {
      case 0:
        frames.push(bytes(rng, 40)); // noise instead of a frame
        break;
      case 1: // a length far beyond maxPayload: the server must refuse, not allocate
        frames.push(Uint8Array.of(0x82, 0xff, 0, 0, 0x10, 0, 0, 0, 0, 0, 1, 2, 3, 4));
        break;
      case 2:
        frames.push(frame(rng.int(16), message, { unmasked: rng.int(2) === 0 }));
        break;
      case 3: // a fragmented message, maybe never finished
        frames.push(frame(base64 ? 1 : 2, message, { fin: false }));
        if (rng.int(2) === 0) frames.push(frame(0, bytes(rng, 20)));
        break;
      case 4:
        frames.push(frame(9, bytes(rng, 20))); // ping
        break;
      case 5:
        frames.push(mutate(frame(base64 ? 1 : 2, message), rng));
        break;
      default:
        frames.push(frame(base64 ? 1 : 2, message));
    }
  }
  if (rng.int(2) === 0) frames.push(frame(8, Uint8Array.of(0x03, 0xe8)));
  return frames;
}

Deno.test({
  name: "20 s of hostile WebSocket exec sessions: each is closed by the server, which serves on",
  sanitizeOps: true,
  sanitizeResources: true,
  async fn() {
    const seed = 0x3eb5eed;
    const rng = random(seed);
    await using s = await startHandlerServer({ streamIdleTimeoutMs: 1_000 });
    let upgraded = 0;
    const count = await forBudget(fuzzBudgetMs(20), async (i) => {
      const protocol = PROTOCOLS[rng.int(PROTOCOLS.length)];
      const tty = rng.int(2) === 0 ? "&tty=1" : "";
      const answer = await rawUpgrade(s.port, [
        `GET /exec/default/web/app?command=cat&input=1&output=1${tty} HTTP/1.1`,
        "Host: 127.0.0.1",
        "Connection: Upgrade",
        "Upgrade: websocket",
        `Sec-WebSocket-Key: ${btoa(String.fromCharCode(rng.int(256), ...new Uint8Array(15)))}`,
        "Sec-WebSocket-Version: 13",
        `Sec-WebSocket-Protocol: ${protocol}`,
      ]);
      const socket = answer.socket;
      const closed = new Promise<void>((resolve) => {
        if (socket.destroyed) resolve();
        socket.once("close", () => resolve());
      });
      try {
        if (answer.status !== 101) return;
        upgraded++;
        socket.on("data", () => {});
        socket.resume();
        const base64 = wsProtocolInfo(protocol)!.base64;
        for (const bytes of hostileFrames(rng, base64)) {
          if (socket.destroyed) break;
          socket.write(Buffer.from(bytes));
        }
        if (rng.int(2) === 0) socket.end();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const gaveUp = new Promise<string>((resolve) => {
          timer = setTimeout(() => resolve("open"), 10_000);
        });
        const outcome = await Promise.race([closed.then(() => "closed"), gaveUp]);
        clearTimeout(timer);
        assert.equal(outcome, "closed", `seed ${seed} session ${i}: the server kept it open`);
      } finally {
        socket.destroy();
        await closed;
      }
    });
    await s.handler.drained();
    console.log(`fuzz: seed ${seed}, ${count} sessions, ${upgraded} upgraded`);
    assert.ok(upgraded >= 20, `only ${upgraded} sessions upgraded in the budget`);
    // Still serving: a plain exec works.
    const ws = await openWebSocket(
      s.port,
      "/exec/default/web/app?command=echo&command=ok&output=1",
      [
        "v5.channel.k8s.io",
      ],
    );
    const out: number[] = [];
    ws.on("message", (data: Uint8Array) => {
      if (data[0] === 1) out.push(...data.subarray(1));
    });
    await new Promise((resolve) => ws.on("close", resolve));
    assert.equal(new TextDecoder().decode(Uint8Array.from(out)), "ok\n");
  },
});
