/**
 * The kit's typed client (provider/kube_client.ts) for a provider loaded by path or URL: such a
 * module has its own copy of the kit and of `k8s/`, so vkubelet's `KubeClient` and its errors
 * come from classes the provider did not load. The copies here are the same files imported under
 * another specifier (`?copy`), which Deno loads as separate modules with separate classes.
 */
import assert from "node:assert/strict";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../base/log.ts";
import { KubeApiError, KubeClient } from "../../k8s/mod.ts";
import { isKubeNotFound, type ProviderDeps, type ProviderKubeClient } from "../../provider/mod.ts";
import { createProvider as createKubernetesProvider } from "../../providers/kubernetes/mod.ts";
import { kubeVolumeSource } from "../../providers/process/volumes/kube_source.ts";
import { FakeClock } from "../fakes/clock.ts";

const otherErrors = await import("../../k8s/errors.ts?copy");
const otherClient = await import("../../k8s/client.ts?copy");

function deps(kube: ProviderKubeClient | undefined, signal: AbortSignal): ProviderDeps {
  return {
    nodeName: "vk-test",
    log: getLogger(["vkubelet", "test"]),
    clock: new FakeClock(),
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal,
    kube,
  };
}

Deno.test("a 404 from another copy of the client module reads as not found", () => {
  const foreign = new otherErrors.KubeApiError(404, { method: "GET", path: "/x" });
  assert.ok(!(foreign instanceof KubeApiError), "the copy really is another class");
  assert.ok(isKubeNotFound(foreign));
  assert.ok(isKubeNotFound(new KubeApiError(404, { method: "GET", path: "/x" })));
  assert.ok(!isKubeNotFound(new otherErrors.KubeApiError(403, { method: "GET", path: "/x" })));
  assert.ok(!isKubeNotFound(new Error("404")));
});

Deno.test("process volumes read a missing ConfigMap as absent, whichever client copy threw", async () => {
  const fail = (code: number) => () =>
    Promise.reject(new otherErrors.KubeApiError(code, { method: "GET", path: "/cm" }));
  const kube = (get: () => Promise<ConfigMap>) =>
    ({
      configMaps: { get },
      secrets: { get: fail(403) },
      serviceAccounts: { createToken: fail(403) },
    }) as unknown as ProviderKubeClient;
  assert.equal(await kubeVolumeSource(kube(fail(404))).getConfigMap("ns", "cm"), undefined);
  await assert.rejects(kubeVolumeSource(kube(fail(403))).getSecret("ns", "s"), /403 Forbidden/);
});

Deno.test("the kubernetes provider takes vkubelet's client from another module copy", async () => {
  const stop = new AbortController();
  const dir = await Deno.makeTempDir({ prefix: "vk-kube-client-" });
  const connection = { server: "https://127.0.0.1:1", namespace: "default", source: "test" };
  using foreign = new otherClient.KubeClient(connection);
  assert.ok(!(foreign instanceof KubeClient));
  // Type-checked: the other copy's class, which TypeScript will not take as a KubeClient (its
  // #private fields differ), is a ProviderKubeClient by shape.
  const kube: ProviderKubeClient = foreign;
  const config = { kubeconfig: `${dir}/missing.kubeconfig`, namespace: "offload" };
  try {
    // Past the client check, it fails on the downstream kubeconfig: the client was accepted.
    await assert.rejects(
      createKubernetesProvider(config, deps(kube, stop.signal)),
      /cannot load the downstream cluster's kubeconfig/,
    );
    await assert.rejects(
      createKubernetesProvider(config, deps(undefined, stop.signal)),
      /needs vkubelet's client of the upstream cluster \(ProviderDeps\.kube\)/,
    );
  } finally {
    stop.abort();
    await Deno.remove(dir, { recursive: true });
  }
});
