/**
 * The HTTP layer of KubeClient against a local Deno.serve that plays transport behaviour
 * (status codes, Retry-After, bodies); the apiserver's API itself is tested in the
 * integration tests.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_USER_AGENT, KubeClient } from "../../k8s/client.ts";
import { TokenFileSource } from "../../k8s/config/token_file.ts";
import type { ConnectionConfig } from "../../k8s/config/types.ts";
import {
  isConflict,
  isConnectionError,
  isForbidden,
  isGone,
  isKubeApiError,
  isKubeNotFound,
  isServerUnavailable,
  isTooManyRequests,
  type KubeApiError,
} from "../../k8s/errors.ts";
import { RecordingClock, tempDir } from "./_fixtures.ts";

interface Seen {
  method: string;
  url: URL;
  headers: Headers;
  body: string;
}

/** Serves `answer` on 127.0.0.1 for the duration of `fn`, recording every request. */
async function withServer(
  answer: (req: Request, seen: Seen[]) => Response | Promise<Response>,
  fn: (server: string, seen: Seen[]) => Promise<void>,
): Promise<void> {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    seen.push({
      method: req.method,
      url: new URL(req.url),
      headers: req.headers,
      body: await req.text(),
    });
    return answer(req, seen);
  });
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`, seen);
  } finally {
    await server.shutdown();
  }
}

function config(server: string, extra: Partial<ConnectionConfig> = {}): ConnectionConfig {
  return { server, namespace: "default", source: "test", ...extra };
}

function status(code: number, reason: string, message: string, headers: HeadersInit = {}) {
  return Response.json(
    { kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message },
    { status: code, headers },
  );
}

Deno.test("a JSON request carries the user agent, token and body, and parses the answer", async () => {
  await withServer(
    () => Response.json({ kind: "Pod", metadata: { name: "p" } }),
    async (url, seen) => {
      using kube = new KubeClient(config(url, { credentials: { token: "abc" } }));
      const pod = await kube.request<{ metadata: { name: string } }>({
        method: "POST",
        path: "/api/v1/namespaces/ns/pods",
        query: { dryRun: "All", fieldManager: undefined },
        body: { metadata: { name: "p" } },
      });
      assert.equal(pod.metadata.name, "p");
      assert.equal(seen[0].method, "POST");
      assert.equal(seen[0].url.pathname, "/api/v1/namespaces/ns/pods");
      assert.equal(seen[0].url.search, "?dryRun=All");
      assert.equal(seen[0].headers.get("authorization"), "Bearer abc");
      assert.equal(seen[0].headers.get("user-agent"), DEFAULT_USER_AGENT);
      assert.match(DEFAULT_USER_AGENT, /^vkubelet\/\d+\.\d+\.\d+/);
      assert.equal(seen[0].headers.get("content-type"), "application/json");
      assert.deepEqual(JSON.parse(seen[0].body), { metadata: { name: "p" } });
    },
  );
});

Deno.test("the apiserver's Status becomes a KubeApiError the predicates recognise", async () => {
  const answers: Record<string, Response> = {
    "/nf": status(404, "NotFound", 'pods "x" not found'),
    "/conflict": status(409, "Conflict", "the object has been modified"),
    "/exists": status(409, "AlreadyExists", 'pods "x" already exists'),
    "/forbidden": status(403, "Forbidden", "user cannot get pods"),
    "/gone": status(410, "Expired", "too old resource version"),
    "/proxy": new Response("<html>bad gateway</html>", { status: 400 }),
  };
  await withServer((req) => answers[new URL(req.url).pathname], async (url) => {
    using kube = new KubeClient(config(url));
    const fail = (path: string) => kube.request({ path }).then(() => undefined, (e) => e);
    const notFound = await fail("/nf");
    assert.ok(isKubeNotFound(notFound) && isKubeApiError(notFound));
    assert.equal(notFound.message, 'GET /nf: 404 NotFound: pods "x" not found');
    assert.ok(isConflict(await fail("/conflict")));
    const exists = await fail("/exists");
    assert.ok(isConflict(exists) && !isKubeNotFound(exists));
    assert.equal((exists as KubeApiError).reason, "AlreadyExists");
    assert.ok(isForbidden(await fail("/forbidden")));
    assert.ok(isGone(await fail("/gone")));
    const proxy = await fail("/proxy");
    assert.match(proxy.message, /400 BadRequest: <html>bad gateway<\/html>/);
  });
});

Deno.test("429 is retried after the Retry-After the apiserver asked for", async () => {
  await withServer((_req, seen) => {
    if (seen.length < 3) return status(429, "TooManyRequests", "slow down", { "retry-after": "2" });
    return Response.json({ ok: true });
  }, async (url, seen) => {
    const clock = new RecordingClock();
    using kube = new KubeClient(config(url), { clock });
    assert.deepEqual(await kube.request({ method: "POST", path: "/x", body: {} }), { ok: true });
    assert.equal(seen.length, 3);
    assert.deepEqual(clock.sleeps, [2000, 2000]);
  });
});

Deno.test("a write that failed with 5xx is retried only when the apiserver says Retry-After", async () => {
  await withServer((req, seen) => {
    const path = new URL(req.url).pathname;
    if (path === "/plain") return status(503, "ServiceUnavailable", "down");
    if (seen.filter((s) => s.url.pathname === "/after").length === 1) {
      return status(503, "ServiceUnavailable", "down", { "retry-after": "1" });
    }
    return Response.json({});
  }, async (url, seen) => {
    const clock = new RecordingClock();
    using kube = new KubeClient(config(url), { clock });
    const err = await kube.request({ method: "POST", path: "/plain", body: {} }).catch((e) => e);
    assert.ok(isServerUnavailable(err));
    assert.equal(seen.length, 1, "a POST without Retry-After is not repeated");
    await kube.request({ method: "POST", path: "/after", body: {} });
    assert.deepEqual(clock.sleeps, [1000]);
  });
});

Deno.test("reads are retried on 5xx with growing backoff, then the error surfaces", async () => {
  await withServer(() => status(500, "InternalError", "etcd timeout"), async (url, seen) => {
    const clock = new RecordingClock();
    using kube = new KubeClient(config(url), { clock, retry: { maxRetries: 3 } });
    const err = await kube.request({ path: "/flaky" }).catch((e) => e);
    assert.ok(isServerUnavailable(err));
    assert.equal(seen.length, 4);
    assert.equal(clock.sleeps.length, 3);
    assert.ok(clock.sleeps[0] < clock.sleeps[1] && clock.sleeps[1] < clock.sleeps[2]);
  });
});

Deno.test("when 429 never stops, the caller gets isTooManyRequests", async () => {
  await withServer(
    () => status(429, "TooManyRequests", "no", { "retry-after": "1" }),
    async (url) => {
      using kube = new KubeClient(config(url), {
        clock: new RecordingClock(),
        retry: { maxRetries: 2 },
      });
      assert.ok(isTooManyRequests(await kube.request({ path: "/x" }).catch((e) => e)));
    },
  );
});

Deno.test("aborting a request stops it while it waits out a Retry-After", async () => {
  await withServer(
    () => status(429, "TooManyRequests", "no", { "retry-after": "60" }),
    async (url) => {
      using kube = new KubeClient(config(url));
      const controller = new AbortController();
      const pending = kube.request({ path: "/x", signal: controller.signal }).catch((e) => e);
      await new Promise((r) => setTimeout(r, 100));
      const reason = new Error("stop");
      controller.abort(reason);
      assert.equal(await pending, reason);
    },
  );
});

Deno.test("after a 401 a rotated token file is read again and the request repeated once", async () => {
  await using dir = await tempDir();
  const tokenPath = join(dir.path, "token");
  await Deno.writeTextFile(tokenPath, "old");
  await withServer((req) => {
    if (req.headers.get("authorization") === "Bearer new") return Response.json({ ok: 1 });
    return status(401, "Unauthorized", "Unauthorized");
  }, async (url, seen) => {
    const credentialSource = new TokenFileSource(tokenPath);
    using kube = new KubeClient(config(url, { credentialSource }));
    await credentialSource.get(); // caches "old"
    await Deno.writeTextFile(tokenPath, "new");
    assert.deepEqual(await kube.request({ path: "/x" }), { ok: 1 });
    assert.deepEqual(seen.map((s) => s.headers.get("authorization")), ["Bearer old", "Bearer new"]);
    await Deno.writeTextFile(tokenPath, "wrong");
    credentialSource.invalidate();
    const err = await kube.request({ path: "/x" }).catch((e) => e);
    assert.equal((err as KubeApiError).code, 401, "a second 401 in a row surfaces");
  });
});

Deno.test("an unreachable apiserver is a connection error that names the URL", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  using kube = new KubeClient(config(`http://127.0.0.1:${port}`), {
    clock: new RecordingClock(),
    retry: { maxRetries: 1 },
  });
  const err = await kube.request({ path: "/api" }).catch((e) => e);
  assert.ok(isConnectionError(err), String(err));
  assert.match(err.message, new RegExp(`cannot reach the apiserver at http://127.0.0.1:${port}`));
});

Deno.test("a server URL with a path prefix keeps the prefix, and streams come back as bytes", async () => {
  await withServer(() => new Response("line1\nline2\n"), async (url, seen) => {
    using kube = new KubeClient(config(`${url}/k8s/clusters/c1`));
    const body = await kube.request({ path: "/api/v1/pods", query: { watch: true }, stream: true });
    assert.equal(await new Response(body).text(), "line1\nline2\n");
    assert.equal(seen[0].url.pathname, "/k8s/clusters/c1/api/v1/pods");
  });
});

Deno.test("the client-side rate limit spaces requests out once the burst is spent", async () => {
  await withServer(() => Response.json({}), async (url) => {
    const clock = new RecordingClock();
    using kube = new KubeClient(config(url), { clock, qps: 10, burst: 2 });
    for (let i = 0; i < 4; i++) await kube.request({ path: "/x" });
    assert.equal(clock.sleeps.length, 2, "the first two go at once");
    assert.ok(clock.sleeps.every((ms) => ms > 50 && ms <= 200), String(clock.sleeps));
  });
});

Deno.test("event writes have their own client-side limit and never wait behind other requests", async () => {
  await withServer(() => Response.json({}), async (url) => {
    const clock = new RecordingClock();
    using kube = new KubeClient(config(url), {
      clock,
      qps: 10,
      burst: 2,
      eventQps: 5,
      eventBurst: 3,
    });
    for (let i = 0; i < 3; i++) {
      await kube.events.create("default", { metadata: { name: `e${i}` }, involvedObject: {} });
    }
    assert.equal(clock.sleeps.length, 0, "three events fit the event burst");
    for (let i = 0; i < 2; i++) await kube.request({ path: "/x" });
    assert.equal(clock.sleeps.length, 0, "events did not spend the shared budget");
    await kube.events.create("default", { metadata: { name: "e3" }, involvedObject: {} });
    assert.equal(clock.sleeps.length, 1, "the fourth event waits for the event limit");
    // Events wait in rounds: a second's worth of tokens (5), capped at the burst (3), at 5/s.
    assert.ok(clock.sleeps[0] > 500 && clock.sleeps[0] <= 600, String(clock.sleeps));
  });
});
