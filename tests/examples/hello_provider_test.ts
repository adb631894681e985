/**
 * The example provider reads the ConfigMaps its pods mount through the kit's typed client
 * (`ProviderDeps.kube`) and shows them in the container's log.
 */
import assert from "node:assert/strict";
import type { ConfigMap, Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import { KubeApiError } from "../../k8s/mod.ts";
import type { ProviderKubeClient } from "../../provider/mod.ts";
import { createProvider } from "../../examples/hello_provider.ts";
import { FakeClock } from "../fakes/clock.ts";

const configMaps: Record<string, ConfigMap> = { settings: { data: { mode: "a", level: "3" } } };

/** Only what the example calls; the rest of the client is never reached. */
const kube = {
  configMaps: {
    get: (_ns: string, name: string) =>
      configMaps[name]
        ? Promise.resolve(configMaps[name])
        : Promise.reject(new KubeApiError(404, { method: "GET", path: `/configmaps/${name}` })),
  },
} as unknown as ProviderKubeClient;

Deno.test("the example provider logs the keys of the ConfigMaps a pod mounts", async () => {
  const stop = new AbortController();
  const provider = await createProvider({ greeting: "hi" }, {
    nodeName: "vk-example",
    log: getLogger(["vkubelet", "test"]),
    clock: new FakeClock(),
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: stop.signal,
    kube,
  });
  const pod: Pod = {
    metadata: { namespace: "shop", name: "web" },
    spec: {
      containers: [{ name: "main", image: "img" }],
      volumes: [
        { name: "a", configMap: { name: "settings" } },
        { name: "b", configMap: { name: "absent" } },
        { name: "c", emptyDir: {} },
      ],
    },
  };
  await provider.createPod(pod, {});
  const ref = { namespace: "shop", pod: "web", container: "main" };
  const logs = await new Response(await provider.getContainerLogs!(ref, {})).text();
  assert.equal(
    logs,
    "hi from shop/web/main\nconfigMap settings: level, mode\nconfigMap absent: not found\n",
  );
  stop.abort();
});
