import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { Informer, type WatchEvent } from "../../../k8s/mod.ts";
import {
  DependencyMirror,
  type DependencyMirrorOptions,
} from "../../../providers/kubernetes/copies/dependencies.ts";
import { Placement } from "../../../providers/kubernetes/placement.ts";

/** Cluster A's ConfigMaps: a list and a watch a test feeds, behind the real Informer. */
class UpstreamConfigMaps {
  objects = new Map<string, ConfigMap>();
  #watchers = new Set<(event: WatchEvent<ConfigMap>) => void>();
  #rv = 1;

  put(object: ConfigMap): void {
    const stored = {
      ...object,
      metadata: { ...object.metadata, resourceVersion: `${++this.#rv}` },
    };
    const type = this.objects.has(stored.metadata.name!) ? "MODIFIED" : "ADDED";
    this.objects.set(stored.metadata.name!, stored);
    for (const send of this.#watchers) send({ type, object: stored });
  }

  informer(options: { fieldSelector?: string }) {
    const name = options.fieldSelector!.replace("metadata.name=", "");
    const watchers = this.#watchers;
    const objects = this.objects;
    return new Informer<ConfigMap>({
      source: {
        list: () => {
          const found = objects.get(name);
          return Promise.resolve({
            items: found ? [found] : [],
            metadata: { resourceVersion: "1" },
          });
        },
        async *watch({ signal }) {
          const queue: WatchEvent<ConfigMap>[] = [];
          let wake = () => {};
          const send = (e: WatchEvent<ConfigMap>) => {
            if (e.object.metadata?.name === name) queue.push(e);
            wake();
          };
          watchers.add(send);
          signal?.addEventListener("abort", () => wake(), { once: true });
          try {
            while (!signal?.aborted) {
              while (queue.length) yield queue.shift()!;
              await new Promise<void>((r) => wake = r);
            }
          } finally {
            watchers.delete(send);
          }
        },
      },
    });
  }
}

/** Cluster B's ConfigMaps: the writes the mirror made. */
class DownstreamConfigMaps {
  writes: string[] = [];
  update(object: ConfigMap) {
    this.writes.push(`update ${object.metadata?.name} ${JSON.stringify(object.data)}`);
    return Promise.resolve(object);
  }
  create(_ns: string, object: ConfigMap) {
    this.writes.push(`create ${object.metadata?.name}`);
    return Promise.resolve(object);
  }
  delete(_ns: string, name: string) {
    this.writes.push(`delete ${name}`);
    return Promise.resolve({});
  }
}

const flush = () => new Promise((r) => setTimeout(r, 10));

Deno.test("a mirror told to stand by stops copying changes into B and deletes no copy", async () => {
  const upstream = new UpstreamConfigMaps();
  const downstream = new DownstreamConfigMaps();
  upstream.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "1" } });
  const stop = new AbortController();
  const mirror = new DependencyMirror({
    upstream: { configMaps: upstream, secrets: upstream } as unknown as DependencyMirrorOptions[
      "upstream"
    ],
    downstream: {
      configMaps: downstream,
      secrets: downstream,
    } as unknown as DependencyMirrorOptions[
      "downstream"
    ],
    placement: new Placement({ namespace: "b-ns" }, "vk-1"),
    nodeName: "vk-1",
    log: getLogger(["vkubelet", "test"]),
    signal: stop.signal,
  });
  await mirror.track("shop/web-0", [{ kind: "configMaps", namespace: "shop", name: "cfg" }]);
  assert.equal(downstream.writes.length, 1, "copied while leading");
  upstream.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "2" } });
  await flush();
  assert.equal(downstream.writes.length, 2, "a change is copied while leading");
  assert.match(downstream.writes[1], /"a":"2"/);

  mirror.standby();
  assert.deepEqual(mirror.mirrored, []);
  upstream.put({ metadata: { name: "cfg", namespace: "shop" }, data: { a: "3" } });
  mirror.untrack("shop/web-0");
  await flush();
  assert.equal(downstream.writes.length, 2, "nothing written to B while standing by");

  await mirror.track("shop/web-0", [{ kind: "configMaps", namespace: "shop", name: "cfg" }]);
  assert.equal(downstream.writes.length, 3, "tracked again in the next term: copied at once");
  assert.match(downstream.writes[2], /"a":"3"/);
  stop.abort();
  await mirror.close();
});
