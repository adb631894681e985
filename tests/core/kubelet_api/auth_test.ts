import assert from "node:assert/strict";
import { requestAttributes } from "../../../core/kubelet_api/mod.ts";
import { certEnv, setup } from "../../../tools/harness/kubelet_api_fakes.ts";

Deno.test("paths and methods map to the kubelet's verbs and subresources", () => {
  const table: Array<[string, string, string, string[]]> = [
    ["GET", "/stats/summary", "get", ["stats"]],
    ["POST", "/stats/summary", "create", ["stats"]],
    ["GET", "/stats", "get", ["stats"]],
    ["GET", "/metrics", "get", ["metrics"]],
    ["GET", "/metrics/resource", "get", ["metrics"]],
    ["GET", "/metrics/cadvisor", "get", ["metrics"]],
    ["GET", "/logs/", "get", ["log"]],
    ["GET", "/pods", "get", ["pods", "proxy"]],
    ["GET", "/runningpods/", "get", ["pods", "proxy"]],
    ["GET", "/healthz", "get", ["healthz", "proxy"]],
    ["GET", "/healthz/ping", "get", ["healthz", "proxy"]],
    ["GET", "/readyz", "get", ["healthz", "proxy"]],
    ["GET", "/configz", "get", ["configz", "proxy"]],
    ["POST", "/checkpoint/ns/p/c", "create", ["checkpoint"]],
    ["GET", "/containerLogs/ns/p/c", "get", ["proxy"]],
    ["POST", "/exec/ns/p/c", "create", ["proxy"]],
    ["GET", "/exec/ns/p/c", "get", ["proxy"]],
    ["POST", "/attach/ns/p/c", "create", ["proxy"]],
    ["POST", "/portForward/ns/p", "create", ["proxy"]],
    ["PUT", "/debug/flags/v", "update", ["proxy"]],
    ["DELETE", "/anything", "delete", ["proxy"]],
    ["PATCH", "/anything", "patch", ["proxy"]],
    // A prefix only counts at a path boundary (auth.go isSubpath).
    ["GET", "/statsfoo", "get", ["proxy"]],
    ["GET", "/podsx", "get", ["proxy"]],
  ];
  for (const [method, path, verb, subresources] of table) {
    assert.deepEqual(requestAttributes(method, path), { verb, subresources }, `${method} ${path}`);
  }
});

Deno.test("a request without certificate or token gets 401 as Status JSON", async () => {
  await using t = await setup();
  const res = await t.app.request("/pods");
  assert.equal(res.status, 401);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.deepEqual(body, {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: "Unauthorized",
    reason: "Unauthorized",
    code: 401,
  });
  assert.equal(t.access.reviews.length, 0);
});

Deno.test("an unverified client certificate is not an identity", async () => {
  await using t = await setup();
  const res = await t.app.request("/pods", {}, certEnv("admin", ["system:masters"], false));
  assert.equal(res.status, 401);
  await res.body?.cancel();
});

Deno.test("a verified certificate's CN and O are the user and groups", async () => {
  await using t = await setup();
  const res = await t.app.request("/healthz", {}, certEnv("admin", ["system:masters", "ops"]));
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "ok");
  const { user, attributes } = t.access.reviews[0];
  assert.equal(user.username, "admin");
  assert.deepEqual(user.groups, ["system:masters", "ops", "system:authenticated"]);
  assert.deepEqual(attributes, {
    verb: "get",
    resource: "nodes",
    subresource: "healthz",
    name: "vk-test",
  });
});

Deno.test("a token without the permission gets 403 naming user, verb and subresources", async () => {
  await using t = await setup();
  const res = await t.app.request("/pods", { headers: { authorization: "Bearer good-token" } });
  assert.equal(res.status, 403);
  const body = await res.json();
  assert.equal(body.reason, "Forbidden");
  assert.equal(body.code, 403);
  assert.equal(
    body.message,
    "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])",
  );
  // Both candidate subresources were asked.
  assert.deepEqual(t.access.reviews.map((r) => r.attributes.subresource), ["pods", "proxy"]);
});

Deno.test("a token with the permission gets through", async () => {
  await using t = await setup();
  const res = await t.app.request("/stats/summary", {
    headers: { authorization: "Bearer good-token" },
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).node.nodeName, "vk-test");
});

Deno.test("pods subresource allows /pods without proxy", async () => {
  await using t = await setup();
  t.access.rules.bob = ["get pods"];
  t.tokens.users["bob-token"] = { username: "bob", groups: [] };
  const res = await t.app.request("/pods", { headers: { authorization: "Bearer bob-token" } });
  assert.equal(res.status, 200);
  await res.body?.cancel();
  assert.deepEqual(t.access.reviews.map((r) => r.attributes.subresource), ["pods"]);
});

Deno.test("a rejected token is 401 even with anonymous enabled", async () => {
  await using t = await setup({ auth: { anonymous: true } as never });
  const res = await t.app.request("/healthz", { headers: { authorization: "Bearer nope" } });
  assert.equal(res.status, 401);
  await res.body?.cancel();
});

Deno.test("anonymous requests are system:anonymous and still authorized", async () => {
  await using t = await setup({ auth: { anonymous: true } as never });
  const denied = await t.app.request("/healthz");
  assert.equal(denied.status, 403);
  await denied.body?.cancel();
  assert.equal(t.access.reviews[0].user.username, "system:anonymous");
  assert.deepEqual(t.access.reviews[0].user.groups, ["system:unauthenticated"]);
  t.access.rules["system:anonymous"] = ["get healthz"];
  await t.clock.advance(30_001);
  const allowed = await t.app.request("/healthz");
  assert.equal(allowed.status, 200);
  await allowed.body?.cancel();
});

Deno.test("anonymous is off by default", async () => {
  await using t = await setup();
  t.access.rules["system:anonymous"] = ["*"];
  const res = await t.app.request("/healthz");
  assert.equal(res.status, 401);
  await res.body?.cancel();
});

Deno.test("token reviews are cached for their TTL", async () => {
  await using t = await setup();
  const call = async (token: string) => {
    const res = await t.app.request("/stats/summary", {
      headers: { authorization: `Bearer ${token}` },
    });
    await res.body?.cancel();
    return res.status;
  };
  assert.equal(await call("good-token"), 200);
  assert.equal(await call("good-token"), 200);
  assert.equal(t.tokens.calls, 1);
  await t.clock.advance(120_001);
  assert.equal(await call("good-token"), 200);
  assert.equal(t.tokens.calls, 2);
  // Refusals are remembered for 10 s.
  assert.equal(await call("bad"), 401);
  assert.equal(await call("bad"), 401);
  assert.equal(t.tokens.calls, 3);
  await t.clock.advance(10_001);
  assert.equal(await call("bad"), 401);
  assert.equal(t.tokens.calls, 4);
});

Deno.test("access decisions are cached: allows for 5 minutes, denies for 30 seconds", async () => {
  await using t = await setup();
  const carol = certEnv("carol");
  const call = async () => {
    const res = await t.app.request("/metrics", {}, carol);
    await res.body?.cancel();
    return res.status;
  };
  assert.equal(await call(), 403);
  t.access.rules.carol = ["get metrics"];
  assert.equal(await call(), 403, "deny still cached");
  await t.clock.advance(30_001);
  assert.equal(await call(), 200);
  t.access.rules.carol = [];
  assert.equal(await call(), 200, "allow still cached");
  await t.clock.advance(299_000);
  assert.equal(await call(), 200, "allow still cached after 4m59s");
  await t.clock.advance(2_000);
  assert.equal(await call(), 403);
  assert.equal(t.access.reviews.length, 3);
});

Deno.test("a bearer token in the WebSocket protocol header is accepted", async () => {
  await using t = await setup();
  const encoded = btoa("good-token").replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  const res = await t.app.request("/stats/summary", {
    headers: {
      "sec-websocket-protocol":
        `v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.${encoded}`,
    },
  });
  assert.equal(res.status, 200);
  await res.body?.cancel();
});

Deno.test("with anonymous enabled, a client certificate that fails verification is 401", async () => {
  await using t = await setup({ auth: { anonymous: true } as never });
  t.access.rules["system:anonymous"] = ["*"];
  const res = await t.app.request("/healthz", {}, certEnv("admin", ["system:masters"], false));
  assert.equal(res.status, 401);
  await res.body?.cancel();
  assert.equal(t.access.reviews.length, 0, "never reviewed as system:anonymous");
  const none = await t.app.request("/healthz");
  assert.equal(none.status, 200, "no credentials at all is still anonymous");
  await none.body?.cancel();
});

Deno.test("with anonymous enabled, a WebSocket bearer token that does not decode is 401", async () => {
  await using t = await setup({ auth: { anonymous: true } as never });
  t.access.rules["system:anonymous"] = ["*"];
  for (const bad of ["%%%not-base64", "", "_w"]) {
    const res = await t.app.request("/healthz", {
      headers: {
        "sec-websocket-protocol": `v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.${bad}`,
      },
    });
    assert.equal(res.status, 401, bad);
    await res.body?.cancel();
  }
  assert.equal(t.access.reviews.length, 0);
});
