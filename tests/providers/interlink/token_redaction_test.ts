/**
 * The bearer token (and a password in the url) never reaches a log record, an event or an error
 * message, even when the plugin echoes the request's Authorization header in a 500, a 401 or a
 * malformed JSON answer, or does not answer at all.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { FakeClock } from "../../../base/fake_clock.ts";
import type { Provider } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/interlink/mod.ts";
import { captureLogs, eventsKube, until } from "./_logs.ts";

const TOKEN = "eyJhbGciOiJSUzI1NiJ9.s3cr3t-payload.signature-xyz";
const PASSWORD = "url-pass-0f9e8d";

/** Echoes the Authorization header back in every kind of failure. */
function echoingPlugin() {
  let creates = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    await req.text();
    const auth = req.headers.get("authorization") ?? "";
    if (path === "/create") {
      // The first create fails with the header quoted; the second works.
      if (++creates === 1) {
        return new Response(`internal error; request had ${auth}`, { status: 500 });
      }
      return Response.json({ PodUID: "7a7a7a7a-0000-4000-8000-000000000003", PodJID: "job-1" });
    }
    if (path === "/status" && creates >= 2) return new Response(`${auth} {"broken"`);
    if (path === "/status") return Response.json([]);
    if (path === "/delete") return new Response(`unauthorized: ${auth}`, { status: 401 });
    if (path === "/pinglink") return new Response(`{"token": "${auth}`, { status: 503 });
    return new Response("no such call", { status: 404 });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, server };
}

const pod: Pod = {
  metadata: { namespace: "default", name: "tok", uid: "7a7a7a7a-0000-4000-8000-000000000003" },
  spec: { containers: [{ name: "main", image: "busybox" }] },
};

Deno.test("the bearer token appears in no log record, event or error, whatever the plugin echoes", async () => {
  const plugin = echoingPlugin();
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const refusedPort = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const dir = await Deno.makeTempDir();
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, `${TOKEN}\n`);
  const { kube, recorder, events } = eventsKube();
  const clock = new FakeClock();
  const stop = new AbortController();
  const errors: string[] = [];
  const failing = async (work: Promise<unknown>) => {
    const err = await work.then(() => undefined, (e: Error) => e);
    assert.ok(err, "the call failed");
    errors.push(String(err), String((err as Error).cause ?? ""));
  };
  await captureLogs(async ({ log, records, text }) => {
    const deps = {
      nodeName: "vk-tok",
      log,
      clock,
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: stop.signal,
      kube,
      events: recorder,
    };
    const providers: Provider[] = [];
    const make = (config: Record<string, unknown>) => {
      const p = createProvider({ tokenFile, statusInterval: "1s", ...config }, deps);
      providers.push(p);
      return p;
    };
    try {
      const plugin1 = make({ target: "plugin", url: plugin.url });
      await failing(plugin1.createPod(structuredClone(pod), {})); // 500 quoting the header
      await plugin1.createPod(structuredClone(pod), {});
      await until("a status poll with malformed JSON", async () => {
        await clock.advance(1_000);
        return records.some((r) => text(r).includes("malformed JSON"));
      });
      await plugin1.deletePod(structuredClone(pod), {}); // 401 quoting the header: gone
      await failing(make({ target: "interlink", url: plugin.url }).ping!({})); // 503
      const refused = make({
        target: "plugin",
        url: `http://vkubelet:${PASSWORD}@127.0.0.1:${refusedPort}`,
      });
      await failing(refused.createPod(structuredClone(pod), {}));
      await failing(refused.ping!({}));
    } finally {
      stop.abort();
      for (const p of providers) await p.close?.();
      await plugin.server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
    const logged = records.map(text);
    const said = [...logged, ...events.map((e) => e.message ?? ""), ...errors].join("\n");
    // The failures did happen, and quoted what the plugin said.
    for (const seen of [/HTTP 500/, /HTTP 401/, /HTTP 503/, /malformed JSON/, /ECONNREFUSED/]) {
      assert.match(said, seen);
    }
    assert.match(said, /Bearer <redacted>/, "the echoed header is shown without its token");
    assert.ok(!said.includes(TOKEN), "the bearer token is in no record, event or error");
    assert.ok(!said.includes("s3cr3t-payload"), "nor any part of it");
    assert.ok(!said.includes(PASSWORD), "the url's password is in none either");
  });
});
