/**
 * The kubelet API's bounds against a flood: reviews beyond the in-flight cap and its waiting
 * line are answered 429 at once, connections beyond the cap (in total, or from one client
 * address) are closed as they arrive, and a connection that never starts TLS is closed after the
 * handshake timeout.
 */
import assert from "node:assert/strict";
import https from "node:https";
import net from "node:net";
import { realClock } from "../../../base/clock.ts";
import {
  alwaysAllow,
  boundedReviewers,
  KubeletServer,
  ReviewSlots,
  type TokenReviewer,
} from "../../../core/kubelet_api/mod.ts";
import { selfSignedCertificate } from "../../../x509/mod.ts";
import {
  bareProvider,
  FakeAccessReviewer,
  log,
  NODE,
  setup,
} from "../../../tools/harness/kubelet_api_fakes.ts";

/** A reviewer that answers "not authenticated" only when released; counts what it started. */
function heldReviewer() {
  const release = Promise.withResolvers<void>();
  const reviewer: TokenReviewer & { started: number } = {
    started: 0,
    async review() {
      reviewer.started++;
      await release.promise;
      return { authenticated: false, error: "unknown token" };
    },
  };
  return { reviewer, release: () => release.resolve() };
}

Deno.test("bearer tokens beyond the review cap and its line are answered 429 at once", async () => {
  const held = heldReviewer();
  const bounded = boundedReviewers(
    new ReviewSlots({ inFlight: 2, waiting: 1 }),
    held.reviewer,
    new FakeAccessReviewer({}),
  );
  await using t = await setup({ auth: { ...bounded } });
  const send = (token: string) =>
    t.app.request("/pods", { headers: { authorization: `Bearer ${token}` } });
  const first = [send("a"), send("b"), send("c")];
  // Token hashing is asynchronous: let the three reach their reviews (two run, one waits).
  while (held.reviewer.started < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const refused = await send("d");
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get("retry-after"), "1");
  assert.equal((await refused.json()).reason, "TooManyRequests");
  // Two reviews run, one waits; none was started for the refused request.
  assert.equal(held.reviewer.started, 2);
  held.release();
  for (const answer of await Promise.all(first)) assert.equal(answer.status, 401);
  assert.equal(held.reviewer.started, 3);
});

Deno.test("a review waiting for its turn leaves the line when its request is aborted", async () => {
  const held = heldReviewer();
  const slots = new ReviewSlots({ inFlight: 1, waiting: 1 });
  const running = slots.run(() => held.reviewer.review("a", {}));
  const gone = new AbortController();
  const waiting = slots.run(() => held.reviewer.review("b", {}), gone.signal);
  gone.abort(new Error("client went away"));
  await assert.rejects(waiting, /client went away/);
  // Its place in the line is free again.
  const next = slots.run(() => held.reviewer.review("c", {}));
  held.release();
  await Promise.all([running, next]);
  assert.equal(held.reviewer.started, 2);
});

/** Starts a server on 127.0.0.1 with `options`; stops it when disposed. */
async function startServer(
  options: {
    maxConnections?: number;
    maxConnectionsPerAddress?: number;
    handshakeTimeoutMs?: number;
  },
) {
  const stop = new AbortController();
  const server = new KubeletServer({
    provider: bareProvider(),
    nodeName: NODE,
    podCache: () => [],
    log,
    clock: realClock,
    auth: { accessReviewer: alwaysAllow, anonymous: true },
    hostname: "127.0.0.1",
    port: 0,
    certificates: selfSignedCertificate({
      nodeName: NODE,
      dnsNames: ["localhost"],
      ipAddresses: ["127.0.0.1"],
      clock: realClock,
      log,
    }),
    shutdownGraceMs: 0,
    ...options,
  });
  const running = server.run(stop.signal);
  await Promise.race([server.ready, running]);
  return {
    port: server.address!.port,
    async [Symbol.asyncDispose]() {
      stop.abort();
      await running;
    },
  };
}

/** Whether the server closed `conn` within `ms` (a read sees the end), else false. */
async function closedWithin(conn: Deno.Conn, ms: number): Promise<boolean> {
  const timer = AbortSignal.timeout(ms);
  const ended = conn.read(new Uint8Array(64)).then((n) => n === null, () => true);
  const late = new Promise<false>((resolve) =>
    timer.addEventListener("abort", () => resolve(false))
  );
  return await Promise.race([ended, late]);
}

Deno.test("a connection beyond the cap is closed as it arrives", async () => {
  await using s = await startServer({ maxConnections: 3, handshakeTimeoutMs: 60_000 });
  const idle: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      idle.push(await Deno.connect({ hostname: "127.0.0.1", port: s.port }));
    }
    const extra = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
    idle.push(extra);
    assert.ok(await closedWithin(extra, 5_000), "the fourth connection was left open");
    // The three within the cap are still open (their handshake timeout is a minute away).
    assert.equal(await closedWithin(idle[0], 200), false);
    // One leaves; a new one gets its slot and a TLS answer.
    idle.shift()!.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const answer = await fetchHealthz(s.port);
    assert.equal(answer, 200);
  } finally {
    for (const conn of idle) {
      try {
        conn.close();
      } catch { /* Closed by the server already. */ }
    }
  }
});

/** A TCP connection from `localAddress`, and whether the server closed it within `ms`. */
async function connectFrom(port: number, localAddress: string) {
  const socket = net.connect({ host: "127.0.0.1", port, localAddress });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return {
    closedWithin: (ms: number) =>
      Promise.race([
        closed.then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), ms)),
      ]),
    close: async () => {
      socket.destroy();
      await closed;
    },
  };
}

Deno.test("one client address cannot take every connection: beyond its own cap it is closed, and another address still gets an answer", async () => {
  await using s = await startServer({
    maxConnections: 10,
    maxConnectionsPerAddress: 3,
    handshakeTimeoutMs: 60_000,
  });
  const flood: Awaited<ReturnType<typeof connectFrom>>[] = [];
  try {
    // As many idle sockets as the global cap, all from 127.0.0.2.
    for (let i = 0; i < 10; i++) flood.push(await connectFrom(s.port, "127.0.0.2"));
    const closed = await Promise.all(flood.map((c) => c.closedWithin(1_000)));
    assert.deepEqual(closed, [false, false, false, true, true, true, true, true, true, true]);
    // Another client still gets through, while 127.0.0.2 holds its three.
    assert.equal(await fetchHealthz(s.port, "127.0.0.3"), 200);
    assert.equal(await flood[0].closedWithin(100), false);
    // A slot 127.0.0.2 gives back is its own again.
    await flood[0].close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await fetchHealthz(s.port, "127.0.0.2"), 200);
  } finally {
    await Promise.all(flood.map((c) => c.close()));
  }
});

Deno.test("a connection that never starts TLS is closed after the handshake timeout", async () => {
  await using s = await startServer({ handshakeTimeoutMs: 300 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
  try {
    assert.ok(await closedWithin(conn, 10_000), "the idle connection was left open");
  } finally {
    conn.close();
  }
});

/** GET /healthz over TLS (self-signed, so not verified), from `localAddress`; the status code. */
function fetchHealthz(port: number, localAddress?: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = https.get(
      {
        host: "127.0.0.1",
        port,
        path: "/healthz",
        rejectUnauthorized: false,
        agent: false,
        localAddress,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
  });
}
