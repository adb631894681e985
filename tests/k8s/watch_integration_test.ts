/**
 * Watches and informers against the real control plane: reconnects, apiserver restarts, 410.
 */
import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import type { KubeClient } from "../../k8s/client.ts";
import { isGone } from "../../k8s/errors.ts";
import type { KubeRequester, RequestOptions } from "../../k8s/request.ts";
import { Informer, type ListWatchSource } from "../../k8s/watch/informer.ts";
import { resumableWatch, watchEvents } from "../../k8s/watch/watch.ts";
import { adminClient, dropNamespace, type TestCluster, useCluster } from "./_cluster.ts";
import { eventually } from "../../tools/harness/wait.ts";

/** Records handler calls for the named objects as `add a`, `update b`, `delete c`. */
function record(informer: Informer<ConfigMap>, names: Set<string>): string[] {
  const calls: string[] = [];
  const note = (what: string) => (o: ConfigMap) => {
    if (names.has(o.metadata!.name!)) calls.push(`${what} ${o.metadata!.name}`);
  };
  informer.on("add", note("add"));
  informer.on("update", note("update"));
  informer.on("delete", note("delete"));
  return calls;
}

/** A list+watch source on a namespace's config maps that counts lists. */
function countingSource(kube: KubeClient, namespace: string) {
  const counts = { lists: 0 };
  const source: ListWatchSource<ConfigMap> = {
    list: (o) => {
      counts.lists++;
      return kube.configMaps.list({ ...o, namespace });
    },
    watch: (o) => kube.configMaps.watch({ ...o, namespace }),
  };
  return { source, counts };
}

/**
 * Tests that stop the apiserver use a cluster of their own, so that tests running against the
 * shared one at the same time are not disturbed.
 */
const RESTARTABLE = "k8s-client";

const cm = (name: string, data: Record<string, string> = {}): ConfigMap => ({
  metadata: { name },
  data,
});

Deno.test("a watch resumes where it left off each time the apiserver ends the connection", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-resume");
  const controller = new AbortController();
  try {
    let connections = 0;
    const counting = {
      request(options: RequestOptions & { stream?: boolean }) {
        if (options.stream) connections++;
        return kube.request(options as RequestOptions);
      },
    } as KubeRequester;
    const start = await kube.configMaps.list({ namespace: ns });
    const seen: string[] = [];
    const watching = (async () => {
      const events = resumableWatch<ConfigMap>(counting, kube.configMaps.path(ns), {
        resourceVersion: start.metadata?.resourceVersion,
        timeoutSeconds: 1,
        signal: controller.signal,
      });
      for await (const { type, object } of events) {
        if (type !== "BOOKMARK") seen.push(`${type} ${object.metadata?.name}`);
      }
    })();
    const expected: string[] = [];
    for (let i = 0; i < 6; i++) {
      await kube.configMaps.create(ns, cm(`c${i}`));
      expected.push(`ADDED c${i}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    await eventually("every change", () => seen.length >= expected.length ? true : undefined);
    await new Promise((r) => setTimeout(r, 1500)); // room for a duplicate to show up
    assert.ok(connections >= 3, `only ${connections} connections; the test needs reconnects`);
    assert.deepEqual(seen.filter((s) => !s.includes("kube-root-ca")), expected);
    controller.abort();
    await watching;
  } finally {
    controller.abort();
    await dropNamespace(cluster, ns);
  }
});

Deno.test("an informer survives an apiserver restart and sees every change exactly once", async () => {
  const cluster = await useCluster(RESTARTABLE);
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-restart");
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  try {
    await kube.configMaps.create(ns, cm("a"));
    const { source, counts } = countingSource(kube, ns);
    const informer = new Informer<ConfigMap>({ source });
    const calls = record(informer, new Set(["a", "b", "c"]));
    running = informer.run(controller.signal);
    await informer.synced;
    await kube.configMaps.create(ns, cm("b"));
    await eventually("b", () => informer.store.get(ns, "b"));

    await cluster.stopApiserver();
    await cluster.startApiserver();
    // Changes made straight away, most likely before the informer has reconnected.
    await kube.configMaps.create(ns, cm("c"));
    await kube.configMaps.patch(ns, "a", { type: "merge", body: { data: { v: "2" } } });
    await kube.configMaps.delete(ns, "b");

    await eventually(
      "the changes after the restart",
      () =>
        informer.store.get(ns, "c") && !informer.store.get(ns, "b") &&
          informer.store.get(ns, "a")?.data?.v === "2" || undefined,
    );
    await new Promise((r) => setTimeout(r, 1000)); // room for a duplicate to show up
    assert.deepEqual(calls, ["add a", "add b", "add c", "update a", "delete b"]);
    const names = informer.store.list().map((o) => o.metadata?.name).sort();
    assert.deepEqual(names, ["a", "c", "kube-root-ca.crt"]);
    assert.ok(counts.lists >= 1);
  } finally {
    controller.abort();
    await running;
    await dropNamespace(cluster, ns);
  }
});

/**
 * Makes sure a watch from resourceVersion 1 is refused with 410: true once the watch cache
 * started after etcd's first revisions, which a fresh cluster's may not have.
 */
async function ensureVersionOneIsTooOld(cluster: TestCluster, kube: KubeClient): Promise<void> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 3000);
  try {
    for await (
      const _ of kube.configMaps.watch({
        namespace: "default",
        resourceVersion: "1",
        signal: controller.signal,
      })
    ) break;
  } catch (err) {
    if (isGone(err)) return;
    throw err;
  } finally {
    clearTimeout(timer);
  }
  // A write after the cache's start, so that the restarted cache begins at a later revision.
  const bump = await kube.configMaps.create("default", { metadata: { generateName: "vk-bump-" } });
  await cluster.stopApiserver();
  await cluster.startApiserver();
  await kube.configMaps.delete("default", bump.metadata!.name!);
}

Deno.test("a 410 from the apiserver makes the informer relist, and its store ends up right", async () => {
  const cluster = await useCluster(RESTARTABLE);
  using kube = await adminClient(cluster);
  await ensureVersionOneIsTooOld(cluster, kube);
  const ns = await cluster.newNamespace("k8s-gone");
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  try {
    for (const name of ["a", "b", "c"]) await kube.configMaps.create(ns, cm(name));
    const { source, counts } = countingSource(kube, ns);
    let releaseWatch!: () => void;
    const gate = new Promise<void>((resolve) => releaseWatch = resolve);
    let watches = 0;
    const informer = new Informer<ConfigMap>({
      source: {
        list: source.list,
        // The first watch starts from a version the apiserver no longer has, after the test
        // has changed things behind the informer's back.
        async *watch(o) {
          if (watches++ === 0) {
            await gate;
            yield* kube.configMaps.watch({ ...o, namespace: ns, resourceVersion: "1" });
          } else {
            yield* source.watch(o);
          }
        },
      },
    });
    const calls = record(informer, new Set(["a", "b", "c", "d"]));
    running = informer.run(controller.signal);
    await informer.synced;
    await kube.configMaps.delete(ns, "a");
    await kube.configMaps.patch(ns, "b", { type: "merge", body: { data: { v: "2" } } });
    await kube.configMaps.create(ns, cm("d"));
    releaseWatch();

    await eventually("the relist", () => counts.lists >= 2 && watches >= 2 ? true : undefined);
    assert.deepEqual(calls, ["add a", "add b", "add c", "update b", "add d", "delete a"]);
    const names = informer.store.list().map((o) => o.metadata?.name).sort();
    assert.deepEqual(names, ["b", "c", "d", "kube-root-ca.crt"]);
    assert.equal(informer.store.get(ns, "b")?.data?.v, "2");
  } finally {
    controller.abort();
    await running;
    await dropNamespace(cluster, ns);
  }
});

Deno.test("a pod informer with a node field selector sees only that node's pods", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-podinf");
  const node = `vk-test-${crypto.randomUUID().slice(0, 6)}`;
  const controller = new AbortController();
  const informer = kube.pods.informer({ fieldSelector: `spec.nodeName=${node}` });
  const running = informer.run(controller.signal);
  try {
    await informer.synced;
    const pod = (name: string, nodeName: string) => ({
      metadata: { name },
      spec: { nodeName, containers: [{ name: "c", image: "x" }] },
    });
    await kube.pods.create(ns, pod("mine", node));
    await kube.pods.create(ns, pod("theirs", `${node}-other`));
    await eventually("the bound pod", () => informer.store.get(ns, "mine"));
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(informer.store.keys(), [`${ns}/mine`]);
    await kube.pods.delete(ns, "mine", { gracePeriodSeconds: 0 });
    await eventually("the deletion", () => informer.store.size === 0 ? true : undefined);
  } finally {
    controller.abort();
    await running;
    await dropNamespace(cluster, ns);
  }
});

Deno.test("aborting a watch that has delivered events ends it at once, without an error", async () => {
  const cluster = await useCluster();
  using kube = await adminClient(cluster);
  const ns = await cluster.newNamespace("k8s-abort");
  try {
    for (const name of ["one", "two"]) await kube.configMaps.create(ns, cm(name));
    const controller = new AbortController();
    let seen = 0;
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const consuming = (async () => {
      for await (const _ of watchEvents(kube, path, {}, controller.signal)) seen++;
    })();
    await eventually("the first events", () => seen >= 2 || undefined);
    const aborted = performance.now();
    controller.abort();
    await consuming; // rejects if the abort surfaces as an error
    assert.ok(performance.now() - aborted < 2_000, "the watch kept running after abort");
  } finally {
    await dropNamespace(cluster, ns);
  }
});
