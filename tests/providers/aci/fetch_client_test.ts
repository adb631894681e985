/**
 * The Azure SDK's fetch transport: what the SDK's policies expect of a transport (an abort is an
 * AbortError, which is not retried; no answer is REQUEST_SEND_ERROR, which is; redirects are left
 * to the redirect policy), and an aborted call leaves nothing behind that a server's reset could
 * turn into an uncaught error.
 */
import assert from "node:assert/strict";
import { createHttpHeaders, createPipelineRequest, RestError } from "@azure/core-rest-pipeline";
import { fetchHttpClient } from "../../../providers/aci/client/fetch_client.ts";

function server(handler: (req: Request) => Response | Promise<Response>) {
  const s = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  return { url: `http://127.0.0.1:${s.addr.port}`, close: () => s.shutdown() };
}

Deno.test("a call sends method, headers and body and reads status, headers and text", async () => {
  let seen: { method: string; type: string | null; body: string } | undefined;
  const s = server(async (req) => {
    seen = { method: req.method, type: req.headers.get("content-type"), body: await req.text() };
    return Response.json({ ok: true }, { status: 201, headers: { "x-ms-request-id": "r1" } });
  });
  try {
    const request = createPipelineRequest({
      url: `${s.url}/groups/g1`,
      method: "PUT",
      headers: createHttpHeaders({ "content-type": "application/json" }),
      body: '{"location":"westeurope"}',
    });
    const response = await fetchHttpClient().sendRequest(request);
    assert.deepEqual(seen, {
      method: "PUT",
      type: "application/json",
      body: '{"location":"westeurope"}',
    });
    assert.equal(response.status, 201);
    assert.equal(response.headers.get("x-ms-request-id"), "r1");
    assert.equal(response.bodyAsText, '{"ok":true}');
  } finally {
    await s.close();
  }
});

Deno.test("redirects come back to the SDK's redirect policy, not followed here", async () => {
  const s = server(() => new Response(null, { status: 302, headers: { location: "/elsewhere" } }));
  try {
    const response = await fetchHttpClient().sendRequest(
      createPipelineRequest({ url: `${s.url}/x`, method: "GET" }),
    );
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), "/elsewhere");
  } finally {
    await s.close();
  }
});

Deno.test("an abort is an AbortError, no answer and a timeout are REQUEST_SEND_ERROR", async () => {
  const hold = Promise.withResolvers<void>();
  const s = server(async () => {
    await hold.promise;
    return new Response("late");
  });
  const client = fetchHttpClient();
  try {
    const controller = new AbortController();
    const aborted = client.sendRequest(
      createPipelineRequest({
        url: `${s.url}/slow`,
        method: "GET",
        abortSignal: controller.signal,
      }),
    );
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(aborted, (err: Error) => err.name === "AbortError");

    const timedOut = client.sendRequest(
      createPipelineRequest({ url: `${s.url}/slow`, method: "GET", timeout: 100 }),
    );
    await assert.rejects(timedOut, (err: RestError) => {
      assert.equal(err.code, RestError.REQUEST_SEND_ERROR);
      assert.match(err.message, /no answer from 127\.0\.0\.1:\d+ within 100 ms/);
      return true;
    });
  } finally {
    hold.resolve();
    await s.close();
  }
  const refused = client.sendRequest(createPipelineRequest({ url: s.url, method: "GET" }));
  await assert.rejects(refused, (err: RestError) => err.code === RestError.REQUEST_SEND_ERROR);
});

Deno.test("calls aborted mid-answer, then the server gone: nothing is left to fail later", async () => {
  // A plain TCP server that answers half a response and then resets the connection: what a
  // stopping server or an idle-timeout load balancer does to a connection.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      await conn.write(
        new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial"),
      ).catch(() => {});
    }
  })();
  const uncaught: unknown[] = [];
  const onError = (e: ErrorEvent) => {
    uncaught.push(e.error);
    e.preventDefault();
  };
  globalThis.addEventListener("error", onError);
  try {
    const client = fetchHttpClient();
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController();
      const call = client.sendRequest(createPipelineRequest({
        url: `http://127.0.0.1:${port}/capabilities`,
        method: "GET",
        abortSignal: controller.signal,
      }));
      setTimeout(() => controller.abort(), 30);
      await assert.rejects(call, (err: Error) => err.name === "AbortError");
    }
    for (const conn of conns) {
      try {
        conn.close();
      } catch {
        // Closed by the client's abort already.
      }
    }
    listener.close();
    await accepting.catch(() => {});
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(uncaught, []);
  } finally {
    globalThis.removeEventListener("error", onError);
  }
});
