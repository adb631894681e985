import assert from "node:assert/strict";
import type { Node, Pod, Service } from "kubernetes-types/core/v1.d.ts";
import { SharedPodInformer } from "../../../core/pods/shared_pods.ts";
import { cachedNodeReads, Gate } from "../../../app/heartbeat_api.ts";
import type { NodeApi } from "../../../core/node/mod.ts";
import { Informer, type InformerOptions, type ListOptions } from "../../../k8s/watch/informer.ts";
import type { WatchEvent } from "../../../k8s/watch/watch.ts";
import { realClock } from "../../../base/clock.ts";

/** A list of `items`, then the watch events pushed with `send` until the signal aborts. */
function source<T>(items: T[]) {
  const lists: ListOptions[] = [];
  const queue: WatchEvent<T>[] = [];
  let wake = () => {};
  return {
    lists,
    send(event: WatchEvent<T>) {
      queue.push(event);
      wake();
    },
    source: {
      list(options: ListOptions) {
        lists.push(options);
        return Promise.resolve({ items, metadata: { resourceVersion: "1" } });
      },
      async *watch(options: { signal?: AbortSignal }) {
        while (!options.signal?.aborted) {
          if (queue.length === 0) {
            await new Promise<void>((r) => {
              wake = r;
              options.signal?.addEventListener("abort", () => r(), { once: true });
            });
            continue;
          }
          yield queue.shift()!;
        }
      },
    },
  };
}

function pod(name: string, nodeName: string, rv = "1"): Pod {
  return {
    metadata: { name, namespace: "ns", uid: name, resourceVersion: rv, labels: { big: "x" } },
    spec: { nodeName, containers: [{ name: "main", image: "app" }] },
  };
}

Deno.test("one pod watch of all scheduled pods feeds each node only its own pods", async () => {
  const pods = source([pod("a1", "vk-a"), pod("b1", "vk-b"), pod("x1", "elsewhere")]);
  const services = source<Service>([]);
  let podInformer: Informer<Pod> | undefined;
  const kube = {
    pods: {
      informer: (o: Omit<InformerOptions<Pod>, "source">) =>
        podInformer = new Informer<Pod>({ ...o, source: pods.source }),
    },
    services: {
      informer: (o: Omit<InformerOptions<Service>, "source">) =>
        new Informer<Service>({ ...o, source: services.source }),
    },
  };
  const shared = new SharedPodInformer({ kube: kube as never, clock: realClock });
  const a = shared.view("vk-a");
  const b = shared.view("vk-b");
  const seen: string[] = [];
  a.on("add", (p) => seen.push(`a+${p.metadata!.name}`));
  a.on("update", (p) => seen.push(`a~${p.metadata!.name}`));
  a.on("delete", (p) => seen.push(`a-${p.metadata!.name}`));
  b.on("add", (p) => seen.push(`b+${p.metadata!.name}`));
  const stop = new AbortController();
  const running = shared.run(stop.signal);
  try {
    await a.synced;
    assert.deepEqual(pods.lists.map((l) => l.fieldSelector), ["spec.nodeName!="]);
    assert.deepEqual(a.store.list().map((p) => p.metadata!.name), ["a1"]);
    assert.deepEqual(b.store.list().map((p) => p.metadata!.name), ["b1"]);
    // Another node's pod is kept as a stub only.
    const other = podInformer!.store.getByKey("ns/x1")!;
    assert.equal(other.metadata?.labels, undefined);
    assert.equal(other.spec?.nodeName, "elsewhere");
    pods.send({ type: "MODIFIED", object: pod("a1", "vk-a", "2") });
    pods.send({ type: "ADDED", object: pod("a2", "vk-a", "3") });
    pods.send({ type: "ADDED", object: pod("x2", "elsewhere", "4") });
    pods.send({ type: "DELETED", object: pod("a1", "vk-a", "5") });
    const deadline = Date.now() + 5_000;
    while (seen.length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(seen, ["a+a1", "b+b1", "a~a1", "a+a2", "a-a1"]);
    assert.deepEqual(a.store.list().map((p) => p.metadata!.name), ["a2"]);
    assert.equal(a.store.getByKey("ns/a2")?.metadata?.resourceVersion, "3");
  } finally {
    stop.abort();
    await running;
  }
});

Deno.test("the heartbeat gate lets at most its concurrency through at once", async () => {
  const gate = new Gate(2);
  let inFlight = 0, most = 0;
  const release: (() => void)[] = [];
  const calls = Array.from({ length: 5 }, () =>
    gate.run(async () => {
      most = Math.max(most, ++inFlight);
      await new Promise<void>((r) => release.push(r));
      inFlight--;
    }));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(inFlight, 2);
  assert.equal(gate.waiting, 3);
  while (release.length) {
    release.shift()!();
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(calls);
  assert.equal(most, 2);
  assert.throws(() => new Gate(0), /at least 1/);
});

Deno.test("the heartbeat gate gives a freed slot to an urgent call before older ones", async () => {
  const gate = new Gate(1);
  const order: string[] = [];
  let release!: () => void;
  const first = gate.run(() => new Promise<void>((r) => (release = r)));
  const signal = new AbortController().signal;
  const calls = [
    gate.run(() => Promise.resolve(void order.push("status 1")), { signal }),
    gate.run(() => Promise.resolve(void order.push("status 2")), { signal }),
    gate.run(() => Promise.resolve(void order.push("lease")), { signal, urgent: true }),
  ];
  assert.equal(gate.waiting, 3);
  release();
  await Promise.all([first, ...calls]);
  assert.deepEqual(order, ["lease", "status 1", "status 2"]);
});

Deno.test("a heartbeat call whose signal aborts while it waits leaves unrun", async () => {
  const gate = new Gate(1);
  let release!: () => void;
  const first = gate.run(() => new Promise<void>((r) => (release = r)));
  const stop = new AbortController();
  let ran = false;
  const waiting = gate.run(() => Promise.resolve(void (ran = true)), { signal: stop.signal });
  stop.abort(new Error("deadline"));
  await assert.rejects(waiting, /deadline/);
  assert.equal(gate.waiting, 0);
  release();
  await first;
  // The slot it would have had is free again.
  assert.equal(await gate.run(() => Promise.resolve("next")), "next");
  assert.equal(ran, false);
  await assert.rejects(gate.run(() => Promise.resolve(1), { signal: stop.signal }), /deadline/);
});

Deno.test("the status check reads Nodes from the watch once it has synced, else from the API", async () => {
  const reads: string[] = [];
  const fromApi = (name: string): Node => ({ metadata: { name, resourceVersion: "api" } });
  const api = {
    getNode: (name: string) => {
      reads.push(name);
      return Promise.resolve(fromApi(name));
    },
  } as unknown as NodeApi;
  const cached = new Map<string, Node>([["vk-a", {
    metadata: { name: "vk-a", resourceVersion: "watch" },
  }]]);
  let isSynced = false;
  const reading = cachedNodeReads(api, {
    get isSynced() {
      return isSynced;
    },
    store: { getByKey: (n) => cached.get(n) },
  });
  // Before the watch has synced every read goes to the API.
  assert.equal((await reading.getNode("vk-a", { cached: true })).metadata?.resourceVersion, "api");
  isSynced = true;
  assert.equal(
    (await reading.getNode("vk-a", { cached: true })).metadata?.resourceVersion,
    "watch",
  );
  // An uncached read (registration) and a node the watch does not hold go to the API.
  assert.equal((await reading.getNode("vk-a")).metadata?.resourceVersion, "api");
  assert.equal((await reading.getNode("vk-b", { cached: true })).metadata?.resourceVersion, "api");
  assert.deepEqual(reads, ["vk-a", "vk-a", "vk-b"]);
});
