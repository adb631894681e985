import assert from "node:assert/strict";
import { cleanPath, muxRedirect, routePath } from "../../../core/kubelet_api/mux_paths.ts";
import { setup } from "../../../tools/harness/kubelet_api_fakes.ts";

Deno.test("subtree paths without their slash redirect 301 to it, with the query, before auth", async () => {
  await using t = await setup();
  for (const path of ["/runningpods", "/stats", "/logs", "/checkpoint", "/debug/pprof"]) {
    const res = await t.app.request(`${path}?a=1&b=2`);
    assert.equal(res.status, 301, path);
    assert.equal(res.headers.get("location"), `${path}/?a=1&b=2`);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(await res.text(), `<a href="${path}/?a=1&amp;b=2">Moved Permanently</a>.\n\n`);
  }
});

Deno.test("a trailing slash under a web service root is ignored; /runningpods/ serves", async () => {
  await using t = await setup();
  for (const path of ["/pods", "/pods/", "/runningpods/", "/stats/summary/"]) {
    const res = await t.get(path);
    assert.equal(res.status, 200, path);
    await res.body?.cancel();
  }
  const other = await t.get("/healthz/nope");
  assert.equal(other.status, 404, "only the kubelet's health checks are served");
  await other.body?.cancel();
});

Deno.test("paths are cleaned and redirected as net/http's ServeMux does", () => {
  assert.equal(cleanPath("//pods"), "/pods");
  assert.equal(cleanPath("/a/./b/../c/"), "/a/c/");
  assert.equal(cleanPath("/.."), "/");
  assert.equal(muxRedirect("//runningpods/"), "/runningpods/");
  assert.equal(muxRedirect("/runningpods"), "/runningpods/");
  assert.equal(muxRedirect("/runningpods/"), undefined);
  assert.equal(muxRedirect("/pods"), undefined);
  assert.equal(muxRedirect("/metrics"), undefined);
  assert.equal(routePath("/exec/ns/pod/c/"), "/exec/ns/pod/c");
  assert.equal(routePath("/healthz/"), "/healthz/");
  assert.equal(routePath("/runningpods/"), "/runningpods/");
});
