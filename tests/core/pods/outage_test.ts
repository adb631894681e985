/**
 * The pod controller in a provider outage, on fakes: pods keep their last status marked
 * `ProviderReachable=False`; nothing is created again or deleted while the provider cannot reach
 * its backend, even when its answers say the pods are gone; on recovery statuses are refreshed and
 * a pod the backend lost follows its restart policy.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { boundPod, startController } from "./_harness.ts";

/** A reachability the test switches, as the node side's health monitor would. */
class FakeReachability {
  #health = { healthy: true, since: 0, message: undefined as string | undefined };
  #listeners = new Set<(h: { healthy: boolean }) => void>();
  current() {
    return this.#health;
  }
  onChange(listener: (h: { healthy: boolean }) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  set(healthy: boolean, since: number, message?: string): void {
    this.#health = { healthy, since, message };
    for (const l of this.#listeners) l(this.#health);
  }
}

const mark = (pod: Pod | undefined) =>
  pod?.status?.conditions?.find((c) => c.type === "ProviderReachable");

async function running(names: string[], extra: Partial<Pod["spec"]> = {}) {
  const reach = new FakeReachability();
  const t = startController({ push: false, deps: { reachability: reach } });
  for (const name of names) t.api.pods.put(boundPod(name, extra));
  await t.controller.ready;
  await t.settle(6_000);
  for (const name of names) {
    assert.equal(t.api.pods.pods.get(`shop/${name}`)?.status?.phase, "Running");
  }
  return { t, reach };
}

Deno.test("in an outage pods keep their last status, marked as not refreshed; recovery refreshes and unmarks", async () => {
  const { t, reach } = await running(["web-0"]);
  try {
    const before = t.api.pods.pods.get("shop/web-0")!;
    const since = t.clock.now();
    reach.set(false, since, "cannot reach http://127.0.0.1:1/status: connection refused");
    await t.settle(1_000);
    const marked = t.api.pods.pods.get("shop/web-0")!;
    assert.equal(marked.status?.phase, "Running");
    assert.equal(marked.status?.podIP, before.status?.podIP);
    assert.equal(
      marked.status?.conditions?.find((c) => c.type === "Ready")?.status,
      "True",
      "the pod stays Ready: its workload was fine when last seen",
    );
    assert.equal(mark(marked)?.status, "False");
    assert.match(
      mark(marked)!.message!,
      new RegExp(
        `not refreshed since ${new Date(since).toISOString().slice(0, 19)}Z: the provider`,
      ),
    );
    // Polls and resyncs in the outage write nothing new.
    const writes = t.api.pods.statusWrites.length;
    await t.settle(130_000);
    assert.equal(t.api.pods.statusWrites.length, writes);

    reach.set(true, t.clock.now());
    await t.settle(1_000);
    const refreshed = t.api.pods.pods.get("shop/web-0")!;
    assert.equal(mark(refreshed)?.status, "True");
    assert.match(mark(refreshed)!.message!, /refreshed from the backend/);
    assert.deepEqual(t.provider.ops("create"), ["shop/web-0"]);
  } finally {
    await t.stop();
  }
});

Deno.test("answers given in an outage neither recreate nor delete anything", async () => {
  const { t, reach } = await running(["web-0", "web-1"]);
  try {
    reach.set(false, t.clock.now(), "down");
    // The provider's view of its backend is empty while it cannot reach it.
    const kept = new Map(t.provider.pods);
    t.provider.pods.clear();
    await t.settle(130_000); // two resyncs
    assert.deepEqual(t.provider.ops("create"), ["shop/web-0", "shop/web-1"]);
    assert.deepEqual(t.provider.ops("delete"), []);
    for (const name of ["web-0", "web-1"]) {
      assert.equal(t.api.pods.pods.get(`shop/${name}`)?.status?.phase, "Running");
    }
    // The backend had them all along.
    for (const [k, v] of kept) t.provider.pods.set(k, v);
    reach.set(true, t.clock.now());
    await t.settle(70_000);
    assert.deepEqual(t.provider.ops("create"), ["shop/web-0", "shop/web-1"], "duplicated");
    assert.deepEqual(t.provider.ops("delete"), []);
    assert.equal(mark(t.api.pods.pods.get("shop/web-0"))?.status, "True");
  } finally {
    await t.stop();
  }
});

Deno.test("a pod the backend lost in the outage follows its restart policy: Never fails it", async () => {
  const { t, reach } = await running(["job-0"], { restartPolicy: "Never" });
  try {
    reach.set(false, t.clock.now(), "down");
    await t.settle(1_000);
    t.provider.pods.delete("shop/job-0");
    reach.set(true, t.clock.now());
    await t.settle(70_000);
    const pod = t.api.pods.pods.get("shop/job-0")!;
    assert.deepEqual(t.provider.ops("create"), ["shop/job-0"], "created again");
    assert.equal(pod.status?.phase, "Failed");
    assert.equal(pod.status?.reason, "BackendLostPod");
    const terminated = pod.status?.containerStatuses?.[0].state?.terminated;
    assert.equal(terminated?.reason, "ContainerStatusUnknown");
    assert.equal(terminated?.exitCode, 137);
    assert.equal(t.api.events.withReason("BackendLostPod").length, 1);
  } finally {
    await t.stop();
  }
});

Deno.test("a pod the backend lost in the outage follows its restart policy: Always starts it again, said in an event", async () => {
  const { t, reach } = await running(["web-0"]);
  try {
    reach.set(false, t.clock.now(), "down");
    await t.settle(1_000);
    t.provider.pods.delete("shop/web-0");
    reach.set(true, t.clock.now());
    await t.settle(70_000);
    assert.deepEqual(t.provider.ops("create"), ["shop/web-0", "shop/web-0"]);
    assert.match(
      t.api.events.withReason("BackendLostPod")[0]?.message ?? "",
      /restartPolicy Always: starting it again/,
    );
    assert.equal(t.api.pods.pods.get("shop/web-0")?.status?.phase, "Running");
    assert.equal(mark(t.api.pods.pods.get("shop/web-0"))?.status, "True");
  } finally {
    await t.stop();
  }
});
