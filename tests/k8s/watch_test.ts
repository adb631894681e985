import assert from "node:assert/strict";
import { isGone, KubeApiError } from "../../k8s/errors.ts";
import { resumableWatch, type WatchEvent, watchEvents } from "../../k8s/watch/watch.ts";
import { FakeClock } from "../fakes/clock.ts";
import { FakeRequester, obj } from "./_fake_requester.ts";

type Obj = ReturnType<typeof obj>;

Deno.test("watch events split across chunks arrive whole and in order", async () => {
  const fake = new FakeRequester();
  const controller = new AbortController();
  const events = watchEvents<Obj>(fake, "/api/v1/pods", {}, controller.signal);
  const first = events.next();
  const watch = await fake.nextWatch();
  assert.equal(watch.query.watch, true);
  const line = JSON.stringify({ type: "ADDED", object: obj("a", "5") });
  watch.sendText(line.slice(0, 10));
  watch.sendText(`${line.slice(10)}\n{"type":"DELETED","object":`);
  watch.sendText(`${JSON.stringify(obj("a", "6"))}}\n`);
  watch.end();
  assert.deepEqual((await first).value, { type: "ADDED", object: obj("a", "5") });
  assert.equal(((await events.next()).value as WatchEvent<Obj>).type, "DELETED");
  assert.equal((await events.next()).done, true);
});

Deno.test("an ERROR event with 410 surfaces as isGone", async () => {
  const fake = new FakeRequester();
  const events = watchEvents<Obj>(fake, "/api/v1/pods", {});
  const next = events.next().catch((e) => e);
  const watch = await fake.nextWatch();
  watch.send("ERROR", {
    kind: "Status",
    code: 410,
    reason: "Expired",
    message: "too old resource version: 1 (99)",
  });
  const err = await next;
  assert.ok(isGone(err));
  assert.match(err.message, /too old resource version/);
});

Deno.test("a resumable watch reconnects from the last version seen, bookmarks included", async () => {
  const fake = new FakeRequester();
  const controller = new AbortController();
  const seen: string[] = [];
  const consuming = (async () => {
    const events = resumableWatch<Obj>(fake, "/api/v1/pods", {
      resourceVersion: "10",
      signal: controller.signal,
      clock: new FakeClock(),
    });
    for await (const e of events) seen.push(`${e.type}:${e.object.metadata?.resourceVersion}`);
  })();
  const first = await fake.nextWatch(0);
  assert.equal(first.query.resourceVersion, "10");
  assert.equal(first.query.allowWatchBookmarks, true);
  first.send("ADDED", obj("a", "11"));
  first.send("BOOKMARK", { metadata: { resourceVersion: "15" } });
  first.end();
  const second = await fake.nextWatch(1);
  assert.equal(second.query.resourceVersion, "15");
  second.send("MODIFIED", obj("a", "16"));
  while (seen.length < 3) await new Promise((r) => setTimeout(r, 1));
  second.fail(new TypeError("connection reset"));
  const third = await fake.nextWatch(2);
  assert.equal(third.query.resourceVersion, "16");
  controller.abort();
  await consuming;
  assert.deepEqual(seen, ["ADDED:11", "BOOKMARK:15", "MODIFIED:16"]);
});

Deno.test("a resumable watch backs off while the apiserver is unreachable", async () => {
  const fake = new FakeRequester();
  const clock = new FakeClock();
  const controller = new AbortController();
  fake.failNextWatch = new TypeError("connection refused");
  const consuming = (async () => {
    for await (
      const _ of resumableWatch<Obj>(fake, "/p", { signal: controller.signal, clock })
    ) { /* none expected */ }
  })();
  while (clock.pending === 0) await new Promise((r) => setTimeout(r, 1));
  assert.equal(fake.watches.length, 0, "no reconnect before the backoff ends");
  await clock.advance(2_000);
  const watch = await fake.nextWatch(0);
  assert.ok(watch);
  controller.abort();
  await consuming;
});

Deno.test("a resumable watch stops with the error on 410 and on 403", async () => {
  for (const [code, reason] of [[410, "Expired"], [403, "Forbidden"]] as const) {
    const fake = new FakeRequester();
    fake.failNextWatch = new KubeApiError(code, { method: "GET", path: "/p", status: { reason } });
    const iterate = async () => {
      for await (const _ of resumableWatch<Obj>(fake, "/p", { clock: new FakeClock() })) {
        // nothing
      }
    };
    await assert.rejects(iterate(), (err: KubeApiError) => err.code === code);
  }
});
