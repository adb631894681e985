import assert from "node:assert/strict";
import type { ConfigMap, Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import {
  ConfigSources,
  envReferences,
  volumeReferences,
} from "../../../core/pods/config_sources.ts";
import { FakeClock, flush } from "../../fakes/clock.ts";
import { FakeApi } from "./_fake_api.ts";

const log = getLogger(["vkubelet", "test"]);

function podUsing(name: string, configMaps: string[], secrets: string[] = []): Pod {
  return {
    metadata: { name, namespace: "shop" },
    spec: {
      containers: [{
        name: "main",
        envFrom: configMaps.slice(1).map((cm) => ({ configMapRef: { name: cm } })),
        env: [
          ...configMaps.slice(0, 1).map((cm) => ({
            name: "A",
            valueFrom: { configMapKeyRef: { name: cm, key: "k" } },
          })),
          ...secrets.map((s) => ({
            name: "S",
            valueFrom: { secretKeyRef: { name: s, key: "k" } },
          })),
        ],
      }],
    },
  };
}

function setup() {
  const api = new FakeApi();
  const changes: string[][] = [];
  const sources = new ConfigSources({
    api,
    clock: new FakeClock(),
    log,
    onChange: (keys) => changes.push(keys.sort()),
  });
  const abort = new AbortController();
  const running = sources.run(abort.signal);
  return {
    api,
    sources,
    changes,
    async stop() {
      abort.abort();
      await running;
    },
  };
}

Deno.test("references are read from env, envFrom and every container list", () => {
  const pod = podUsing("p", ["a", "b"], ["s"]);
  pod.spec!.initContainers = [{ name: "init", envFrom: [{ secretRef: { name: "t" } }] }];
  assert.deepEqual(envReferences(pod).sort(), [
    "configMaps/shop/a",
    "configMaps/shop/b",
    "secrets/shop/s",
    "secrets/shop/t",
  ]);
});

Deno.test("only referenced objects are watched, by name, and dropped when unused", async () => {
  const t = setup();
  t.sources.track("shop/p1", podUsing("p1", ["a", "b"], ["s"]));
  t.sources.track("shop/p2", podUsing("p2", ["b"]));
  await flush();
  assert.deepEqual(t.sources.watched.sort(), [
    "configMaps/shop/a",
    "configMaps/shop/b",
    "secrets/shop/s",
  ]);
  assert.deepEqual(t.api.configMaps.informers.map((w) => w.name).sort(), ["a", "b"]);
  t.sources.untrack("shop/p1");
  await flush();
  assert.deepEqual(t.sources.watched, ["configMaps/shop/b"], "b is still used by p2");
  assert.deepEqual(t.api.configMaps.watching, ["shop/b"]);
  assert.deepEqual(t.api.secrets.watching, []);
  t.sources.track("shop/p2", podUsing("p2", []));
  await flush();
  assert.deepEqual(t.sources.watched, []);
  assert.deepEqual(t.api.configMaps.watching, []);
  await t.stop();
});

Deno.test("a change to a watched object re-queues exactly the pods using it", async () => {
  const t = setup();
  t.sources.track("shop/p1", podUsing("p1", ["a"]));
  t.sources.track("shop/p2", podUsing("p2", ["a"]));
  t.sources.track("shop/p3", podUsing("p3", ["other"]));
  await flush();
  assert.deepEqual(t.changes, [], "the initial list is no change");
  const cm: ConfigMap = { metadata: { name: "a", namespace: "shop" }, data: { k: "1" } };
  t.api.configMaps.put(cm);
  await flush();
  assert.deepEqual(t.changes, [["shop/p1", "shop/p2"]]);
  assert.deepEqual(await t.sources.configMap("shop", "a"), cm, "served from the watch cache");
  await t.stop();
});

Deno.test("reads fall back to a GET before the watch has synced, and a missing object is undefined", async () => {
  const t = setup();
  t.api.configMaps.objects.set("shop/x", { metadata: { name: "x", namespace: "shop" }, data: {} });
  assert.equal((await t.sources.configMap("shop", "x"))?.metadata?.name, "x");
  assert.equal(await t.sources.secret("shop", "nope"), undefined);
  assert.equal(t.api.configMaps.gets + t.api.secrets.gets, 2);
  await t.stop();
});

Deno.test("reads of one object before its watch has synced share one GET", async () => {
  const t = setup();
  t.api.configMaps.put({ metadata: { name: "kube-root-ca.crt", namespace: "shop" }, data: {} });
  const reads = await Promise.all(
    Array.from({ length: 20 }, () => t.sources.configMap("shop", "kube-root-ca.crt")),
  );
  assert.equal(t.api.configMaps.gets, 1);
  assert.ok(reads.every((cm) => cm?.metadata?.name === "kube-root-ca.crt"));
  await t.stop();
});

Deno.test("volume sources are watched like env sources", () => {
  const pod: Pod = {
    metadata: { name: "p", namespace: "shop" },
    spec: {
      containers: [{ name: "main" }],
      volumes: [
        { name: "a", secret: { secretName: "s" } },
        { name: "b", configMap: { name: "c" } },
        {
          name: "c",
          projected: {
            sources: [{ configMap: { name: "kube-root-ca.crt" } }, { secret: { name: "t" } }],
          },
        },
      ],
    },
  };
  assert.deepEqual(volumeReferences(pod).sort(), [
    "configMaps/shop/c",
    "configMaps/shop/kube-root-ca.crt",
    "secrets/shop/s",
    "secrets/shop/t",
  ]);
});
