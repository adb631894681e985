/**
 * The zun backend's deletion and failed-create rules on a scripted Zun (what only the real
 * server showed, tools/harness/zun/ and the provider's README): a delete waits for the capsule
 * to leave Creating, deletes again when it fell to Error or when an accepted delete was not
 * acted on, and a failed create deletes the capsules it left behind.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { NotFoundError } from "../../../provider/mod.ts";
import { ZunCapsules } from "../../../providers/zun/client/capsules.ts";
import { LABELS } from "../../../providers/zun/request/capsule.ts";
import type { ZunCapsule } from "../../../providers/zun/status.ts";
import { type ZunApi, ZunApiError } from "../../../providers/zun/client/zun_api.ts";

const pod: Pod = {
  metadata: { namespace: "ns", name: "web", uid: "uid-1" },
  spec: { containers: [{ name: "main", image: "busybox" }] },
};

/** The backend on `api`, with a clock that stands still and sleeps that return at once. */
function backendOn(api: ZunApi): ZunCapsules {
  return new ZunCapsules({
    api,
    nodeName: "vk",
    log: getLogger(["test"]),
    exposePorts: false,
    deleteTimeoutMs: 60_000,
    sleep: () => Promise.resolve(),
    now: () => 0,
  });
}

/** A Zun whose capsule goes through `statuses` (one per GET), recording every call. */
function scripted(statuses: (string | undefined)[], options: { failCreate?: boolean } = {}) {
  const calls: string[] = [];
  let t = 1_000_000;
  const capsule = (status: string): ZunCapsule => ({
    uuid: "c-1",
    name: "ns.web",
    status,
    labels: { [LABELS.node]: "vk", [LABELS.uid]: "uid-1" },
    created_at: new Date(t).toISOString().replace("T", " ").replace("Z", ""),
  });
  let reads = 0;
  const api = {
    call(method: string, path: string) {
      calls.push(`${method} ${path}`);
      if (method === "POST") {
        if (options.failCreate) return Promise.reject(new ZunApiError(500, "Zun POST failed"));
        return Promise.resolve({ status: 202, body: capsule("Creating") });
      }
      if (method === "DELETE") return Promise.resolve({ status: 204, body: undefined });
      if (path.startsWith("/capsules/?")) {
        const status = statuses[Math.min(reads, statuses.length - 1)];
        return Promise.resolve({
          status: 200,
          body: { capsules: status ? [capsule(status)] : [] },
        });
      }
      const status = statuses[Math.min(reads++, statuses.length - 1)];
      if (!status) return Promise.reject(new NotFoundError("404"));
      return Promise.resolve({ status: 200, body: capsule(status) });
    },
    userId: () => Promise.resolve(undefined),
  } as unknown as ZunApi;
  const capsules = new ZunCapsules({
    api,
    nodeName: "vk",
    log: getLogger(["test"]),
    exposePorts: false,
    deleteTimeoutMs: 600_000,
    pollMs: 1_000,
    sleep: (ms) => {
      t += ms;
      return Promise.resolve();
    },
    now: () => t,
  });
  const deletes = () => calls.filter((c) => c.startsWith("DELETE")).length;
  return { capsules, calls, deletes };
}

Deno.test("a delete waits until Zun has made the capsule, then waits for the 404", async () => {
  const zun = scripted(["Creating", "Creating", "Created", "Running", "Deleting", undefined]);
  await zun.capsules.remove(pod);
  assert.equal(zun.deletes(), 1);
  const order = zun.calls.filter((c) => c.startsWith("GET /capsules/c-1") || c.startsWith("DEL"));
  assert.equal(order.indexOf("DELETE /capsules/c-1"), 4, "deleted only once it was Running");
});

Deno.test("a capsule that fell to Error after the delete is deleted again", async () => {
  const zun = scripted(["Running", "Deleting", "Error", "Error", undefined]);
  await zun.capsules.remove(pod);
  assert.equal(zun.deletes(), 2);
});

Deno.test("an accepted delete that Zun did not act on is sent again after 15 s", async () => {
  const zun = scripted([...Array(40).fill("Running"), undefined]);
  await zun.capsules.remove(pod);
  assert.equal(zun.deletes(), 3, "at 0 s, 15 s and 30 s");
});

Deno.test("a create that fails deletes the capsule Zun left for the pod", async () => {
  const zun = scripted(["Error"], { failCreate: true });
  await assert.rejects(zun.capsules.make(pod), /creating the capsule of ns\/web failed/);
  assert.ok(zun.calls.includes("DELETE /capsules/c-1"), zun.calls.join(", "));
});

Deno.test("the status poll reads every pod from one listing, never one begun before it asked", async () => {
  const made = (uuid: string, uid: string, status: string): ZunCapsule => ({
    uuid,
    name: `ns.${uid}`,
    status,
    labels: { [LABELS.node]: "vk", [LABELS.uid]: uid },
    containers: [{ uuid: `${uuid}-c`, name: "x", status }],
  } as ZunCapsule);
  // oldest first, as Zun lists (sort_key id, asc): uid-2 was made twice
  const stored = [made("a", "uid-1", "Running"), made("b-old", "uid-2", "Error")];
  let listings = 0;
  const gates: (() => void)[] = [];
  const api = {
    async call(method: string, path: string) {
      assert.equal(`${method} ${path}`, "GET /capsules/?limit=1000");
      listings++;
      const snapshot = [...stored]; // what the database holds when the listing begins
      await new Promise<void>((r) => gates.push(r));
      return { status: 200, body: { capsules: snapshot } };
    },
    userId: () => Promise.resolve(undefined),
  } as unknown as ZunApi;
  const capsules = backendOn(api);
  const podOf = (uid: string): Pod => ({
    metadata: { namespace: "ns", name: uid, uid },
    spec: { containers: [{ name: "main", image: "busybox" }] },
  });
  const signal = new AbortController().signal;
  const early = capsules.all(); // e.g. a deletion's listing, in flight
  stored.push(made("b", "uid-2", "Creating")); // a capsule made meanwhile
  const reads = [podOf("uid-1"), podOf("uid-2"), podOf("uid-3")].map((p) => ({ pod: p }));
  const poll = capsules.readMany(reads, signal);
  const other = capsules.all();
  const settled = Promise.all([early, poll, other]);
  let done = false;
  settled.finally(() => done = true);
  while (!done) { // answer each listing in turn
    gates.shift()?.();
    await new Promise((r) => setTimeout(r, 0));
  }
  const [first, runs, listed] = await settled;
  assert.equal(first.length, 2);
  assert.equal(listed.length, 3, "the listing the later callers got began after they asked");
  assert.equal(listings, 2, "the two callers that came during the first listing shared the next");
  const stateOf = (i: number) => Object.keys(runs[i]?.containers.main.state ?? {});
  assert.deepEqual(stateOf(0), ["running"]);
  assert.ok(!stateOf(1).includes("terminated"), "uid-2's newest capsule, not the old one in Error");
  assert.equal(runs[2], undefined, "a pod without a capsule is gone");
});

Deno.test("a delete takes the pod's capsules from the poll's listing, lists again after a failed create", async () => {
  const calls: string[] = [];
  let capsules: ZunCapsule[] = [];
  let failCreate = false;
  let made = 0;
  const api = {
    call(method: string, path: string) {
      calls.push(`${method} ${path}`);
      if (method === "POST") {
        made++;
        const capsule = {
          uuid: `c-${made}`,
          name: "ns.web",
          status: "Running",
          labels: { [LABELS.node]: "vk", [LABELS.uid]: "uid-1" },
        } as ZunCapsule;
        capsules.push(capsule); // Zun keeps it even when the answer is lost
        if (failCreate) return Promise.reject(new ZunApiError(504, "gateway timeout"));
        return Promise.resolve({ status: 202, body: capsule });
      }
      if (method === "DELETE") {
        capsules = capsules.filter((c) => !path.endsWith(c.uuid));
        return Promise.resolve({ status: 204, body: undefined });
      }
      if (path.startsWith("/capsules/?")) {
        return Promise.resolve({ status: 200, body: { capsules } });
      }
      const found = capsules.find((c) => path.endsWith(c.uuid));
      return found
        ? Promise.resolve({ status: 200, body: found })
        : Promise.reject(new NotFoundError("404"));
    },
    userId: () => Promise.resolve(undefined),
  } as unknown as ZunApi;
  const zun = backendOn(api);
  const signal = new AbortController().signal;
  const listings = () => calls.filter((c) => c.startsWith("GET /capsules/?")).length;
  const uuids = () => capsules.map((c) => c.uuid);

  await zun.make(pod, signal);
  await zun.readMany([{ pod }], signal); // the status poll
  const before = listings();
  await zun.remove(pod, signal);
  assert.equal(listings(), before, "no listing of its own: the poll's last one showed the pod");
  assert.deepEqual(uuids(), []);

  failCreate = true;
  await zun.make(pod, signal).catch(() => {}); // Zun made c-2, the answer was lost
  failCreate = false;
  await zun.make(pod, signal); // c-3, known
  await zun.readMany([{ pod }], signal);
  const afterPoll = listings();
  capsules.push(
    {
      uuid: "c-later",
      name: "x",
      status: "Running",
      labels: { [LABELS.uid]: "uid-1" },
    } as ZunCapsule,
  );
  await zun.remove(pod, signal);
  assert.equal(listings(), afterPoll + 1, "after a failed create the delete lists for itself");
  assert.deepEqual(uuids(), [], "every capsule of the pod deleted");
});
