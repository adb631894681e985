import assert from "node:assert/strict";
import type { Pod, PodStatus } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import { podKey, PodTable } from "../../provider/mod.ts";

interface Rec {
  pod: Pod;
  phase: string;
}

function table() {
  const pods = new PodTable<Rec>({
    statusOf: (r, terminal) => ({ phase: terminal ? "Failed" : r.phase }) as PodStatus,
    log: getLogger(["test"]),
  });
  const pushed: Pod[] = [];
  pods.subscribe((p) => void pushed.push(p));
  return { pods, pushed };
}

/** Files `r` under its pod's name, as a provider does. */
const put = (pods: PodTable<Rec>, r: Rec) =>
  void pods.records.set(podKey(r.pod.metadata?.namespace, r.pod.metadata?.name), r);

const rec = (name: string, uid: string, phase = "Pending"): Rec => ({
  pod: { metadata: { namespace: "ns", name, uid }, spec: { containers: [] } },
  phase,
});

Deno.test("a status is pushed once per change, to every subscriber, even past one that throws", () => {
  const { pods, pushed } = table();
  pods.subscribe(() => {
    throw new Error("a broken subscriber");
  });
  const also: string[] = [];
  pods.subscribe((p) => void also.push(p.status!.phase!));
  const r = rec("a", "u1");
  put(pods, r);
  pods.notify(r);
  pods.notify(r);
  r.phase = "Running";
  pods.notify(r);
  pods.notify(r, true);
  assert.deepEqual(pushed.map((p) => p.status?.phase), ["Pending", "Running", "Failed"]);
  assert.deepEqual(also, ["Pending", "Running", "Failed"]);
  assert.equal(pushed[0].kind, "Pod");
  // Subscribers get copies: changing one changes nothing in the table.
  pushed[1].metadata!.name = "changed";
  assert.equal(r.pod.metadata?.name, "a");
});

Deno.test("a forgotten pod's name starts over: the same status for a new pod is pushed", async () => {
  const { pods, pushed } = table();
  const first = rec("a", "u1", "Running");
  put(pods, first);
  pods.notify(first);
  pods.forget(first);
  assert.equal(await pods.getPod("ns", "a"), undefined);
  const second = rec("a", "u1", "Running");
  put(pods, second);
  pods.notify(second);
  assert.equal(pushed.length, 2);
});

Deno.test("listPods and deletions wait for adoption; a deletion of another uid finds nothing", async () => {
  const { pods } = table();
  const adoption = Promise.withResolvers<void>();
  pods.holdUntil(adoption.promise);
  let listed: Pod[] | undefined;
  const listing = pods.listPods().then((l) => listed = l);
  const deleting = pods.ofPod(rec("adopted", "u9").pod);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(listed, undefined, "listPods answered before adoption");
  // Adoption finds the backend's pod.
  put(pods, rec("adopted", "u9", "Running"));
  adoption.resolve();
  await listing;
  assert.deepEqual(listed!.map((p) => [p.metadata?.name, p.status?.phase]), [
    ["adopted", "Running"],
  ]);
  assert.equal((await deleting)?.pod.metadata?.uid, "u9");
  assert.equal(await pods.ofPod(rec("adopted", "other-uid").pod), undefined);

  const stop = new AbortController();
  const held = new PodTable<Rec>({ statusOf: () => ({}), log: getLogger(["test"]) });
  held.holdUntil(new Promise(() => {}));
  const waiting = held.listPods(stop.signal);
  stop.abort(new Error("vkubelet stops"));
  await assert.rejects(waiting, /vkubelet stops/);
});
