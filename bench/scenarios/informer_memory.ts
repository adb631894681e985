/**
 * Measures what an informer costs at kubelet scale: creates N pods (default 10,000) bound to one
 * node in a fresh namespace, then times list+watch until `synced` and measures heap bytes per
 * cached pod, with and without `managedFields`. Deletes the namespace at the end.
 *
 *   deno run -A --v8-flags=--expose-gc bench/scenarios/informer_memory.ts [--pods=N] [--kubeconfig=PATH]
 *
 * Without --kubeconfig it brings up (or reuses) the test control plane named `k8s-client`.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../k8s/client.ts";
import type { Informer } from "../../k8s/watch/informer.ts";
import { useCluster } from "../../tools/cluster/harness.ts";

const args = Object.fromEntries(
  Deno.args.map((a) => a.replace(/^--/, "").split("=", 2) as [string, string]),
);
const podCount = Number(args.pods ?? 10_000);
const concurrency = 32;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc so that heap figures are meaningful");

function out(line: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(`${line}\n`));
}

/** A pod shaped like a typical workload: labels, a container with env, resources, probes. */
function benchPod(i: number, node: string): Pod {
  return {
    metadata: {
      name: `bench-${String(i).padStart(5, "0")}`,
      labels: {
        app: "bench",
        shard: String(i % 16),
        "app.kubernetes.io/part-of": "vkubelet-bench",
      },
      annotations: { "bench.vkubelet.io/index": String(i) },
    },
    spec: {
      nodeName: node,
      containers: [{
        name: "app",
        image: "registry.example/bench/app:1.2.3",
        args: ["--port=8080", "--log-level=info"],
        env: [{ name: "MODE", value: "bench" }, { name: "INDEX", value: String(i) }],
        ports: [{ containerPort: 8080, name: "http" }],
        resources: { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "64Mi" } },
        readinessProbe: { httpGet: { path: "/healthz", port: 8080 }, periodSeconds: 10 },
      }],
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
    },
  };
}

async function createPods(kube: KubeClient, ns: string, node: string): Promise<void> {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < podCount) {
      const i = next++;
      await kube.pods.create(ns, benchPod(i, node));
      if ((i + 1) % 2000 === 0) out(`  created ${i + 1} pods`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  out(`created ${podCount} pods in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

async function waitForServiceAccount(kube: KubeClient, ns: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await kube.serviceAccounts.get(ns, "default").then(() => true, () => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`namespace ${ns} got no default service account`);
}

/** Runs one informer to sync; reports time and heap bytes per pod, then stops it. */
async function measure(kube: KubeClient, node: string, label: string, keepManaged: boolean) {
  gc!();
  const before = Deno.memoryUsage().heapUsed;
  const controller = new AbortController();
  const informer: Informer<Pod> = kube.pods.informer({
    fieldSelector: `spec.nodeName=${node}`,
    transform: keepManaged ? (pod) => pod : undefined,
  });
  const started = performance.now();
  const running = informer.run(controller.signal);
  await informer.synced;
  const syncMs = performance.now() - started;
  gc!();
  const after = Deno.memoryUsage().heapUsed;
  const perPod = (after - before) / informer.store.size;
  out(
    `${label}: ${informer.store.size} pods synced in ${(syncMs / 1000).toFixed(2)} s; ` +
      `heap +${((after - before) / 2 ** 20).toFixed(1)} MiB = ${Math.round(perPod)} bytes per pod`,
  );
  controller.abort();
  await running;
  return { syncMs, perPod };
}

async function main(): Promise<void> {
  const kubeconfig = args.kubeconfig ?? (await useCluster("k8s-client")).kubeconfigPath;
  // The bench's own writes should not be throttled by the client-side limit.
  using kube = await KubeClient.fromConfig({ kubeconfig, qps: 0 });
  const ns = `vk-bench-${crypto.randomUUID().slice(0, 6)}`;
  const node = `${ns}-node`;
  await kube.namespaces.create({ metadata: { name: ns } });
  try {
    await waitForServiceAccount(kube, ns);
    await createPods(kube, ns, node);
    await measure(kube, node, "warm-up (not counted)", false);
    await measure(kube, node, "informer, managedFields dropped (default)", false);
    await measure(kube, node, "informer, managedFields kept", true);
  } finally {
    // Bound pods wait for their kubelet; with none, delete them at once, then the namespace.
    await kube.pods.deleteCollection(ns, { gracePeriodSeconds: 0 }).catch(() => {});
    await kube.namespaces.delete(ns);
    out(`deleted namespace ${ns}`);
  }
}

await main();
