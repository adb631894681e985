/**
 * `target: interlink` against a fake of interLink's API server on 127.0.0.1: the virtual
 * kubelet's calls (POST /create with `PodCreateRequests`, DELETE /delete, POST /pinglink with a
 * `PingResponse`), the bearer token re-read when its file changes, and a 500 or malformed JSON
 * answer turned into a retryable error that says what was wrong.
 */
import assert from "node:assert/strict";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { FakeClock } from "../../../base/fake_clock.ts";
import { getLogger } from "../../../base/log.ts";
import { isTransient } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";

interface Seen {
  method: string;
  path: string;
  auth: string | null;
  body: unknown;
}

Deno.test("target interlink speaks interLink's API and re-reads its token", async () => {
  const seen: Seen[] = [];
  let createAnswer = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const text = await req.text();
    seen.push({
      method: req.method,
      path,
      auth: req.headers.get("authorization"),
      body: text && JSON.parse(text),
    });
    if (path === "/pinglink") {
      return Response.json({ status: "ok", resources: { cpu: "12", pods: "50" } });
    }
    if (path === "/status") return Response.json([]);
    if (path === "/create") return new Response(createAnswer, { status: createAnswer ? 200 : 500 });
    return new Response("ok");
  });
  const dir = await Deno.makeTempDir();
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, "first-token\n");
  const stop = new AbortController();
  const provider = createProvider({
    target: "interlink",
    url: `http://127.0.0.1:${server.addr.port}`,
    tokenFile,
    jobScriptBuilderURL: "http://127.0.0.1:1/build",
  }, {
    nodeName: "vk-il",
    log: getLogger(["test"]),
    clock: new FakeClock(Date.now()),
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
  });
  const pod: Pod = {
    metadata: { namespace: "default", name: "p", uid: "0d7b4a2e-0000-4000-8000-000000000001" },
    spec: { containers: [{ name: "main", image: "busybox" }] },
  };
  try {
    await provider.ping({});
    const node: Node = { metadata: { name: "vk-il" } };
    provider.configureNode(node);
    assert.equal(node.status?.capacity?.cpu, "12", "the ping's resources set the capacity");
    assert.equal(node.status?.capacity?.memory, "400Gi", "fields the ping leaves out stay");

    createAnswer = "{not json";
    const malformed = await provider.createPod(pod, {}).catch((e) => e);
    assert.ok(isTransient(malformed));
    assert.match(malformed.message, /malformed JSON/);
    createAnswer = "";
    const failed = await provider.createPod(pod, {}).catch((e) => e);
    assert.ok(isTransient(failed));
    assert.match(failed.message, /HTTP 500/);

    await Deno.writeTextFile(tokenFile, "second-token-longer\n");
    createAnswer = JSON.stringify({ PodUID: pod.metadata!.uid, PodJID: "job-7" });
    await provider.createPod(pod, {});
    const create = seen.findLast((s) => s.path === "/create")!;
    assert.equal(create.method, "POST");
    assert.equal(create.auth, "Bearer second-token-longer", "the changed token file was re-read");
    assert.equal(seen[0].auth, "Bearer first-token");
    const body = create.body as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), [
      "configmaps",
      "jobscriptURL",
      "pod",
      "projectedvolumesmaps",
      "secrets",
    ]);
    assert.equal(body.jobscriptURL, "http://127.0.0.1:1/build");

    await provider.deletePod(pod, {});
    // The kit removes the job after deletePod returns; the pod leaves getPod once it is done.
    while (await provider.getPod("default", pod.metadata!.name!, {})) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const del = seen.findLast((s) => s.path === "/delete")!;
    assert.equal(del.method, "DELETE", "interLink's virtual kubelet sends DELETE /delete");
    assert.equal(seen.find((s) => s.path === "/pinglink")?.method, "POST");
  } finally {
    stop.abort();
    await provider.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
