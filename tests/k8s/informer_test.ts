import assert from "node:assert/strict";
import { KubeApiError } from "../../k8s/errors.ts";
import { NamespacedApi } from "../../k8s/resources/scoped.ts";
import type { Informer } from "../../k8s/watch/informer.ts";
import { internPodParts, SharedParts } from "../../k8s/watch/intern.ts";
import { FakeClock } from "../fakes/clock.ts";
import { FakeRequester, obj } from "./_fake_requester.ts";

type Obj = ReturnType<typeof obj>;

function setup() {
  const fake = new FakeRequester();
  const api = new NamespacedApi<Obj>(fake, { group: "", version: "v1", plural: "pods" });
  return { fake, api };
}

/** Records handler calls as `add:a@1`, `update:a@2<1`, `delete:a@2`. */
function record(informer: Informer<Obj>): string[] {
  const calls: string[] = [];
  const v = (o: Obj) => `${o.metadata.name}@${o.metadata.resourceVersion}`;
  informer.on("add", (o) => calls.push(`add:${v(o)}`));
  informer.on("update", (o, old) => calls.push(`update:${v(o)}<${old.metadata.resourceVersion}`));
  informer.on("delete", (o) => calls.push(`delete:${v(o)}`));
  return calls;
}

const gone = () =>
  new KubeApiError(410, { method: "WATCH", path: "/p", status: { reason: "Expired" } });

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setTimeout(r, 1));
  assert.ok(check(), "condition not reached");
}

Deno.test("an informer lists page by page, syncs, then applies watched changes", async () => {
  const { fake, api } = setup();
  fake.onList = (q) =>
    q.continue === "p2"
      ? { items: [obj("b", "4")], metadata: { resourceVersion: "5" } }
      : { items: [obj("a", "3")], metadata: { resourceVersion: "5", continue: "p2" } };
  const informer = api.informer({
    namespace: "ns",
    fieldSelector: "spec.nodeName=n1",
    pageSize: 1,
  });
  const calls = record(informer);
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await informer.synced;
  assert.deepEqual(calls, ["add:a@3", "add:b@4"]);
  assert.equal(fake.lists[0].fieldSelector, "spec.nodeName=n1");
  assert.equal(fake.lists[0].limit, 1);
  const watch = await fake.nextWatch();
  assert.equal(watch.query.resourceVersion, "5");
  assert.equal(watch.query.fieldSelector, "spec.nodeName=n1");
  watch.send("ADDED", obj("c", "6"));
  watch.send("ADDED", obj("c", "6")); // a duplicate must not reach handlers twice
  watch.send("MODIFIED", obj("a", "7"));
  watch.send("DELETED", obj("b", "8"));
  watch.send("BOOKMARK", { metadata: { resourceVersion: "9" } });
  await until(() => informer.resourceVersion === "9");
  assert.deepEqual(calls.slice(2), ["add:c@6", "update:a@7<3", "delete:b@8"]);
  assert.deepEqual(informer.store.keys().sort(), ["ns/a", "ns/c"]);
  assert.equal(informer.store.get("ns", "a")?.metadata.resourceVersion, "7");
  controller.abort();
  await running;
});

Deno.test("after 410 Gone the informer relists and reports only what changed", async () => {
  const { fake, api } = setup();
  let listed = [obj("same", "1"), obj("changed", "2"), obj("removed", "3")];
  fake.onList = () => ({ items: listed, metadata: { resourceVersion: "10" } });
  const informer = api.informer();
  const calls = record(informer);
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await informer.synced;
  const watch = await fake.nextWatch(0);
  listed = [obj("same", "1"), obj("changed", "12"), obj("new", "13")];
  fake.onList = () => ({ items: listed, metadata: { resourceVersion: "20" } });
  watch.send("ERROR", { kind: "Status", code: 410, reason: "Expired", message: "too old" });
  const next = await fake.nextWatch(1);
  assert.equal(next.query.resourceVersion, "20", "watch resumes from the new list");
  assert.equal(fake.lists.length, 2);
  assert.deepEqual(calls.slice(3), ["update:changed@12<2", "add:new@13", "delete:removed@3"]);
  assert.deepEqual(informer.store.keys().sort(), ["ns/changed", "ns/new", "ns/same"]);
  controller.abort();
  await running;
});

Deno.test("an expired continue token falls back to one full list", async () => {
  const { fake, api } = setup();
  fake.onList = (q) => {
    if (q.continue) throw gone();
    if (q.limit) {
      return { items: [obj("a", "1")], metadata: { resourceVersion: "5", continue: "x" } };
    }
    return { items: [obj("a", "1"), obj("b", "2")], metadata: { resourceVersion: "6" } };
  };
  const informer = api.informer({ pageSize: 1 });
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await informer.synced;
  assert.equal(informer.store.size, 2);
  assert.equal(informer.resourceVersion, "6");
  controller.abort();
  await running;
});

Deno.test("a failing list is retried with backoff until it works", async () => {
  const { fake, api } = setup();
  const clock = new FakeClock();
  let failures = 2;
  fake.onList = () => {
    if (failures-- > 0) {
      throw new KubeApiError(403, { method: "GET", path: "/p", status: { reason: "Forbidden" } });
    }
    return { items: [obj("a", "1")], metadata: { resourceVersion: "1" } };
  };
  const informer = api.informer({ clock });
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await until(() => clock.pending === 1);
  assert.equal(informer.store.size, 0);
  await clock.advance(1_200);
  await until(() => clock.pending === 1 && fake.lists.length === 2);
  await clock.advance(2_400);
  await informer.synced;
  assert.equal(informer.store.size, 1);
  controller.abort();
  await running;
});

Deno.test("stopping before the first list finishes rejects synced and resolves run", async () => {
  const { fake, api } = setup();
  const clock = new FakeClock();
  fake.onList = () => {
    throw new TypeError("unreachable");
  };
  const informer = api.informer({ clock });
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await until(() => clock.pending === 1);
  controller.abort(new Error("shutting down"));
  await running;
  await assert.rejects(informer.synced, /shutting down/);
});

Deno.test("cached objects drop managedFields, and a throwing handler does not stop the others", async () => {
  const { fake, api } = setup();
  fake.onList = () => ({
    items: [obj("a", "1", { managedFields: [{ manager: "kubectl" }] })],
    metadata: { resourceVersion: "1" },
  });
  const informer = api.informer();
  const seen: string[] = [];
  informer.on("add", () => {
    throw new Error("handler bug");
  });
  const off = informer.on("add", (o) => seen.push(o.metadata.name));
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await informer.synced;
  assert.deepEqual(seen, ["a"]);
  assert.equal("managedFields" in informer.store.get("ns", "a")!.metadata, false);
  off();
  await assert.rejects(informer.run(controller.signal), /already running/);
  controller.abort();
  await running;
});

Deno.test("an updated object shares its unchanged parts with the version before", async () => {
  const { fake, api } = setup();
  const labels = () => ({ app: "web", tier: "front" });
  fake.onList = () => ({
    items: [obj("a", "1", { labels: labels() })],
    metadata: { resourceVersion: "1" },
  });
  const informer = api.informer();
  const updates: [Obj, Obj][] = [];
  informer.on("update", (o, old) => updates.push([o, old]));
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await informer.synced;
  const first = informer.store.get("ns", "a")!;
  const watch = await fake.nextWatch();
  watch.send("MODIFIED", obj("a", "2", { labels: labels() }));
  await until(() => updates.length === 1);
  const [now, old] = updates[0];
  assert.equal(old, first);
  assert.equal(now.metadata.resourceVersion, "2");
  const labelsOf = (o: Obj) => (o.metadata as { labels?: unknown }).labels;
  assert.equal(labelsOf(now), labelsOf(first), "one labels object for both versions");
  assert.equal(informer.store.get("ns", "a"), now);
  controller.abort();
  await running;
});

Deno.test("a version expected by its writer shares its parts with what was written", async () => {
  const { fake, api } = setup();
  fake.onList = () => ({ items: [obj("a", "1")], metadata: { resourceVersion: "1" } });
  const informer = api.informer();
  const updates: Obj[] = [];
  informer.on("update", (o) => updates.push(o));
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await informer.synced;
  const watch = await fake.nextWatch();
  const status = { phase: "Running", conditions: [{ type: "Ready", status: "True" }] };
  const written = { ...informer.store.get("ns", "a")!, status };
  informer.expect(written);
  watch.send("MODIFIED", { ...obj("a", "2"), status: structuredClone(status) });
  await until(() => updates.length === 1);
  const statusOf = (o: Obj) => (o as Obj & { status?: unknown }).status;
  assert.equal(statusOf(updates[0]), status, "the written status object, not a second copy");
  // Used once: the next version shares with the cache's own previous version again.
  watch.send("MODIFIED", { ...obj("a", "3"), status: { phase: "Running", conditions: [] } });
  await until(() => updates.length === 2);
  assert.notEqual(statusOf(updates[1]), status);
  controller.abort();
  await running;
});

Deno.test("with intern, listed, added and changed objects share parts across objects", async () => {
  const { fake, api } = setup();
  const labels = (tier: string) => ({ app: "web", tier });
  fake.onList = () => ({
    items: [obj("a", "1", { labels: labels("front") }), obj("b", "1", { labels: labels("front") })],
    metadata: { resourceVersion: "1" },
  });
  const parts = new SharedParts();
  type Labelled = Obj & { metadata: { labels?: Record<string, string> } };
  const informer = api.informer({ intern: (o) => internPodParts(o as Labelled, parts) });
  const calls = record(informer);
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  await informer.synced;
  const labelsOf = (o?: Obj) => (o?.metadata as { labels?: unknown } | undefined)?.labels;
  const [a, b] = [informer.store.get("ns", "a"), informer.store.get("ns", "b")];
  assert.equal(labelsOf(b), labelsOf(a), "listed objects share equal labels");
  const watch = await fake.nextWatch();
  watch.send("ADDED", obj("c", "2", { labels: labels("front") }));
  // b moves to another tier: its new labels are shared with c's when they match.
  watch.send("ADDED", obj("d", "3", { labels: labels("back") }));
  watch.send("MODIFIED", obj("b", "4", { labels: labels("back") }));
  await until(() => calls.length === 5);
  const store = informer.store;
  assert.equal(labelsOf(store.get("ns", "c")), labelsOf(a), "an added object shares too");
  assert.equal(
    labelsOf(store.get("ns", "b")),
    labelsOf(store.get("ns", "d")),
    "so does a changed one",
  );
  assert.deepEqual(labelsOf(store.get("ns", "b")), labels("back"));
  assert.equal(labelsOf(store.get("ns", "a")), labelsOf(a), "a is left as it was");
  controller.abort();
  await running;
});
