import assert from "node:assert/strict";
import { HttpError, parseLogOptions } from "../../../core/kubelet_api/mod.ts";
import { flush } from "../../fakes/clock.ts";
import { bareProvider, setup, testPod } from "../../../tools/harness/kubelet_api_fakes.ts";

const parse = (query: string) => parseLogOptions(new URLSearchParams(query));

function statusOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof HttpError) return err.status;
    throw err;
  }
  return undefined;
}

Deno.test("log query parameters decode like v1 PodLogOptions", () => {
  assert.deepEqual(parse(""), {});
  assert.deepEqual(parse("follow=true&timestamps=1&previous=false"), {
    follow: true,
    timestamps: true,
  });
  // apimachinery: only absent, "0" and "false" are false; an empty value is true.
  assert.deepEqual(parse("follow="), { follow: true });
  assert.deepEqual(parse("tailLines=10&limitBytes=500&sinceSeconds=60"), {
    tailLines: 10,
    limitBytes: 500,
    sinceSeconds: 60,
  });
  assert.deepEqual(parse("sinceTime=2026-01-01T00:00:00Z"), {
    sinceTime: new Date("2026-01-01T00:00:00Z"),
  });
  assert.deepEqual(parse("tailLines=0"), { tailLines: 0 });
  assert.deepEqual(parse("sinceTime=2020-02-29T23:59:59.5%2B01:00"), {
    sinceTime: new Date("2020-02-29T22:59:59.500Z"),
  });
  // Legacy `tail`: a number, or "all" for everything.
  assert.deepEqual(parse("tail=5"), { tailLines: 5 });
  assert.deepEqual(parse("tail=all&tailLines=3"), {});
  assert.deepEqual(parse("stream=All"), {});
});

Deno.test("undecodable log queries are 400, invalid ones 422", () => {
  const table: Array<[string, number]> = [
    ["tailLines=abc", 400],
    ["limitBytes=1.5", 400],
    ["sinceSeconds=1e3", 400],
    ["sinceTime=yesterday", 400],
    ["sinceTime=2026-01-01", 400],
    // Dates Go's time.Parse refuses, which JavaScript would roll over.
    ["sinceTime=2020-02-30T00:00:00Z", 400],
    ["sinceTime=2021-02-29T00:00:00Z", 400],
    ["sinceTime=2026-04-31T00:00:00Z", 400],
    ["sinceTime=2026-13-01T00:00:00Z", 400],
    ["sinceTime=2026-01-01T24:00:00Z", 400],
    ["sinceTime=2026-01-01T00:60:00Z", 400],
    ["sinceTime=2026-01-01T00:00:60Z", 400],
    ["sinceTime=2026-01-01T00:00:00+24:00", 400],
    ["tailLines=-1", 422],
    ["limitBytes=0", 422],
    ["sinceSeconds=0", 422],
    ["sinceSeconds=10&sinceTime=2026-01-01T00:00:00Z", 422],
    ["stream=Stdout", 422],
    ["stream=bogus", 422],
  ];
  for (const [query, status] of table) assert.equal(statusOf(() => parse(query)), status, query);
});

Deno.test("container logs are streamed with the options applied", async () => {
  await using t = await setup();
  const all = await t.get("/containerLogs/default/web/app");
  assert.equal(all.status, 200);
  assert.match(all.headers.get("content-type") ?? "", /^text\/plain/);
  const lines = (await all.text()).trimEnd().split("\n");
  assert.equal(lines.length, 3);
  assert.match(lines[0], /container app of pod default\/web started/);

  const tail = await t.get("/containerLogs/default/web/sidecar?tailLines=1&timestamps=true");
  assert.match(
    await tail.text(),
    /^2026-01-01T00:00:00\.000000000Z mock: container sidecar is running\n$/,
  );

  const limited = await t.get("/containerLogs/default/web/app?limitBytes=10");
  assert.equal(await limited.text(), "mock: cont");
});

Deno.test("unknown pods and containers are 404, missing path parts 400", async () => {
  await using t = await setup();
  const cases: Array<[string, number, string]> = [
    ["/containerLogs/default/nope/app", 404, 'pod "nope" does not exist'],
    ["/containerLogs/other/web/app", 404, 'pod "web" does not exist'],
    ["/containerLogs/default/web/nope", 404, 'container "nope" not found in pod "web"'],
    ["/containerLogs/default/web/", 400, "Missing container name."],
    ["/containerLogs/default/web/app?tailLines=x", 400, ""],
    ["/containerLogs/default/web/app?tailLines=-2", 422, ""],
  ];
  for (const [path, status, message] of cases) {
    const res = await t.get(path);
    assert.equal(res.status, status, path);
    const body = await res.json();
    assert.equal(body.kind, "Status");
    if (message) assert.equal(body.message, message, path);
  }
});

Deno.test("previous logs of a container that never restarted are a 400", async () => {
  await using t = await setup();
  const res = await t.get("/containerLogs/default/web/app?previous=true");
  assert.equal(res.status, 400);
  assert.match((await res.json()).message, /previous terminated container/);
});

Deno.test("a provider without logs answers 501", async () => {
  const pod = testPod("default", "web");
  await using t = await setup({ provider: bareProvider([pod]), pods: [pod] });
  const res = await t.get("/containerLogs/default/web/app");
  assert.equal(res.status, 501);
  assert.equal((await res.json()).reason, "NotImplemented");
});

async function readChunk(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  const timeout = AbortSignal.timeout(5_000);
  const next = await Promise.race([
    reader.read(),
    new Promise<never>((_, reject) =>
      timeout.addEventListener("abort", () => reject(new Error("no chunk within 5 s")))
    ),
  ]);
  return next.done ? "<end>" : new TextDecoder().decode(next.value);
}

Deno.test("follow streams new lines until the container stops", async () => {
  await using t = await setup();
  const res = await t.get("/containerLogs/default/web/app?follow=true");
  const reader = res.body!.getReader();
  assert.match(await readChunk(reader), /is running\n$/);
  const pending = readChunk(reader);
  await flush();
  await t.clock.advance(1_000);
  assert.equal(await pending, "mock: tick 1\n");
  const after = readChunk(reader);
  await flush();
  await t.mock.deletePod(testPod("default", "web"), {});
  assert.equal(await after, "<end>");
});

Deno.test("follow ends when the client goes away", async () => {
  await using t = await setup();
  const client = new AbortController();
  const res = await t.get("/containerLogs/default/web/app?follow=1", { signal: client.signal });
  const reader = res.body!.getReader();
  await readChunk(reader);
  const pending = readChunk(reader).catch(() => "<aborted>");
  await flush();
  assert.equal(t.clock.pending, 1, "the provider waits for the next line");
  await reader.cancel();
  client.abort();
  await pending;
  await flush();
  assert.equal(t.clock.pending, 0, "the provider stopped waiting");
});

Deno.test("follow ends when the server shuts down", async () => {
  const t = await setup();
  const res = await t.get("/containerLogs/default/web/app?follow=true");
  const reader = res.body!.getReader();
  await readChunk(reader);
  const pending = readChunk(reader);
  await flush();
  await t[Symbol.asyncDispose]();
  assert.equal(await pending, "<end>");
});

Deno.test("HEAD on container logs answers without opening a log stream", async () => {
  const pod = testPod("default", "web");
  let opened = 0;
  const provider = {
    ...bareProvider([pod]),
    getContainerLogs: () => {
      opened++;
      // A follow stream that never ends by itself.
      return Promise.resolve(new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) }));
    },
  };
  await using t = await setup({ provider, pods: [pod] });
  const head = await t.get("/containerLogs/default/web/app?follow=true", { method: "HEAD" });
  assert.equal(head.status, 200);
  assert.match(head.headers.get("content-type") ?? "", /^text\/plain/);
  assert.equal(head.body, null);
  assert.equal(opened, 0, "no stream was opened for HEAD");
  const missing = await t.get("/containerLogs/default/nope/app", { method: "HEAD" });
  assert.equal(missing.status, 404, "HEAD still checks the pod");
});
