/**
 * The kubelet API's bounds against a flood: reviews beyond the in-flight cap and its waiting
 * line are answered 429 at once, connections beyond the cap (in total, or from one client
 * address) are closed as they arrive, a flood of unauthenticated connections from two addresses
 * gives way to the apiserver's client certificate (issue #61 5a), and a connection that never
 * starts TLS is closed after the handshake timeout.
 */
import assert from "node:assert/strict";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
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
    clientCaPem?: string;
  },
) {
  const stop = new AbortController();
  const server = new KubeletServer({
    provider: bareProvider(),
    nodeName: NODE,
    podCache: () => [],
    log,
    clock: realClock,
    auth: options.clientCaPem
      ? { accessReviewer: alwaysAllow, clientCaPem: options.clientCaPem }
      : { accessReviewer: alwaysAllow, anonymous: true },
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
    maxConnections: options.maxConnections,
    maxConnectionsPerAddress: options.maxConnectionsPerAddress,
    handshakeTimeoutMs: options.handshakeTimeoutMs,
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

Deno.test("beyond the cap a connection takes the oldest unauthenticated one's slot, and is closed when every slot is authenticated", async () => {
  const client = await clientCertificate();
  await using s = await startServer({
    maxConnections: 3,
    handshakeTimeoutMs: 60_000,
    clientCaPem: client.ca,
  });
  const idle: Deno.Conn[] = [];
  const held: tls.TLSSocket[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      idle.push(await Deno.connect({ hostname: "127.0.0.1", port: s.port }));
    }
    const extra = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
    idle.push(extra);
    assert.ok(await closedWithin(idle[0], 5_000), "the oldest connection was left open");
    // The newcomer and the other two keep theirs (their handshake timeout is a minute away).
    assert.equal(await closedWithin(extra, 200), false);
    assert.equal(await closedWithin(idle[1], 200), false);
    // Authenticated connections take the three slots, one unauthenticated one after another.
    for (let i = 0; i < 3; i++) held.push(await heldTls(s.port, client));
    assert.ok(await closedWithin(extra, 1_000), "an unauthenticated connection outlived the cap");
    // With every slot authenticated, a newcomer is closed as it arrives.
    const late = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
    idle.push(late);
    assert.ok(await closedWithin(late, 5_000), "a connection beyond the cap was left open");
    assert.equal(await requestOn(held[0], "/healthz"), 200);
  } finally {
    for (const socket of held) socket.destroy();
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

/** A CA and a client certificate it signed, as the apiserver's kubelet client has. */
async function clientCertificate(): Promise<{ ca: string; cert: string; key: string }> {
  const dir = await Deno.makeTempDir({ prefix: "vk-client-ca-" });
  const openssl = async (args: string[]) => {
    const out = await new Deno.Command("openssl", { args, cwd: dir, stderr: "piped" }).output();
    if (!out.success) throw new Error(`openssl failed: ${new TextDecoder().decode(out.stderr)}`);
  };
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  try {
    await openssl(["req", "-x509", ...key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1"]
      .concat(["-subj", "/CN=test-client-ca"]));
    await openssl(["req", ...key, "-keyout", "client.key", "-out", "client.csr"]
      .concat(["-subj", "/O=system:masters/CN=kube-apiserver-kubelet-client"]));
    await Deno.writeTextFile(`${dir}/client.ext`, "extendedKeyUsage=clientAuth\n");
    await openssl(["x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key"]
      .concat(["-CAcreateserial", "-out", "client.pem", "-days", "1", "-extfile", "client.ext"]));
    const read = (name: string) => Deno.readTextFile(`${dir}/${name}`);
    return {
      ca: await read("ca.pem"),
      cert: await read("client.pem"),
      key: await read("client.key"),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** GET `path` with a client certificate: the status code, or the error that ended the try. */
function fetchWithCertificate(
  port: number,
  path: string,
  client: { cert: string; key: string },
): Promise<number | string> {
  return new Promise((resolve) => {
    const req = https.get(
      { host: "127.0.0.1", port, path, rejectUnauthorized: false, agent: false, ...client },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", (err) => resolve(`refused: ${err.message}`));
  });
}

/** A TLS connection with a client certificate, its handshake done and no request sent yet. */
function heldTls(port: number, client: { cert: string; key: string }) {
  return new Promise<tls.TLSSocket>((resolve, reject) => {
    const socket = tls.connect(
      {
        host: "127.0.0.1",
        port,
        rejectUnauthorized: false,
        ALPNProtocols: ["http/1.1"],
        ...client,
      },
      () => resolve(socket),
    );
    socket.once("error", reject);
  });
}

/** Sends one `GET path` on `socket` and answers its status code, or why there was none. */
function requestOn(socket: tls.TLSSocket, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    let text = "";
    socket.on("data", (chunk: Uint8Array) => {
      text += new TextDecoder().decode(chunk);
      const status = text.match(/^HTTP\/1\.1 (\d{3}) /);
      if (status) resolve(Number(status[1]));
    });
    socket.once("close", () => resolve(`closed before an answer: ${JSON.stringify(text)}`));
    socket.once("error", (err) => resolve(`failed: ${err.message}`));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  });
}

Deno.test("two addresses filling every connection slot without authenticating cannot shut out the apiserver's client certificate", async () => {
  const client = await clientCertificate();
  await using s = await startServer({
    maxConnections: 10,
    maxConnectionsPerAddress: 8,
    handshakeTimeoutMs: 60_000,
    clientCaPem: client.ca,
  });
  const flood: Awaited<ReturnType<typeof connectFrom>>[] = [];
  let held: tls.TLSSocket | undefined;
  try {
    // Every slot taken by sockets that never start TLS, from two addresses (a process pod can).
    for (let i = 0; i < 10; i++) {
      flood.push(await connectFrom(s.port, i % 2 ? "127.0.0.3" : "127.0.0.2"));
    }
    const open = await Promise.all(flood.map((c) => c.closedWithin(300)));
    assert.deepEqual(open, Array(10).fill(false), "the flood did not take every slot");

    // The apiserver's client still gets an answer; the flood's oldest socket made room.
    assert.equal(await fetchWithCertificate(s.port, "/pods", client), 200);
    assert.equal(await flood[0].closedWithin(1_000), true, "no flood socket gave way");

    // An authenticated connection is never the one closed, however long the flood goes on.
    held = await heldTls(s.port, client);
    for (let i = 0; i < 20; i++) {
      flood.push(await connectFrom(s.port, i % 2 ? "127.0.0.3" : "127.0.0.2"));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await requestOn(held, "/pods"), 200);
  } finally {
    held?.destroy();
    await Promise.all(flood.map((c) => c.close()));
  }
});
