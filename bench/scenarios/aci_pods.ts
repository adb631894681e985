/**
 * The aci provider at scale: N pods (a Deployment on one virtual node) created until all are
 * Running, then deleted until every pod and container group is gone, against the ACI emulator
 * with Prism in the path (every request validated against Azure's specification). The floor
 * sends the same requests directly with the same SDK: a PUT per group, GETs until each group's
 * container runs, a DELETE per group, 16 at a time. Prints both times; no assertion.
 * Run: `deno run -A bench/scenarios/aci_pods.ts [pods=1000] [statusInterval=2s]`.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { aciConfig, startBackend } from "../../tools/harness/aci/env.ts";
import { parseAciConfig } from "../../providers/aci/config.ts";
import { createAciClient } from "../../providers/aci/azure.ts";
import { AciGroups } from "../../providers/aci/groups.ts";

const pods = Number(Deno.args[0] ?? 1000);
const interval = Deno.args[1] ?? "2s";
const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

async function pool(n: number, work: (i: number) => Promise<void>, width = 16) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await work(next++);
  }));
}

/** The floor: the same PUT, GET and DELETE requests, sent directly. */
async function floor(endpoint: string): Promise<{ upMs: number; downMs: number }> {
  const parsed = parseAciConfig(aciConfig(endpoint, { resourceGroup: "vk-floor" }));
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const groups = new AciGroups(createAciClient(parsed.config), parsed.config);
  const body = (i: number) => ({
    location: "westeurope",
    tags: { "vkubelet-node": "floor", "vkubelet-pod": `p-${i}` },
    osType: "Linux",
    restartPolicy: "Always",
    containers: [{
      name: "main",
      image: "busybox",
      command: ["sleep", "3600"],
      resources: { requests: { cpu: 0.1, memoryInGB: 0.1 } },
    }],
  });
  const started = performance.now();
  await pool(pods, (i) => groups.create(`floor-${i}`, body(i)).then(() => {}));
  await pool(pods, async (i) => {
    for (;;) {
      const g = await groups.get(`floor-${i}`);
      if (g?.containers[0]?.instanceView?.currentState?.state === "Running") return;
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  const upMs = performance.now() - started;
  const deleting = performance.now();
  await pool(pods, (i) => groups.delete(`floor-${i}`));
  return { upMs, downMs: performance.now() - deleting };
}

if (import.meta.main) {
  const load = await Deno.readTextFile("/proc/loadavg").catch(() => "unknown");
  say(`aci_pods: ${pods} pods, statusInterval ${interval}, load average before: ${load.trim()}`);
  const cluster = await useCluster();
  const backend = await startBackend();
  const nodeName = `vk-aci-bench-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("aci-bench");
  const kubectl = cluster.kubectlIn(ns);
  const node = await startVkubelet(cluster, {
    nodeName,
    provider: "aci",
    providerConfig: JSON.stringify(
      aciConfig(backend.prism.url, {
        statusInterval: interval,
        capacity: { cpu: "2000", memory: "4000Gi", pods: String(pods + 10) },
      }),
    ),
  });
  const listPods =
    async () => (JSON.parse(await kubectl(["get", "pods", "-o", "json"])).items as Pod[]);
  try {
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "bench" },
      spec: {
        replicas: pods,
        selector: { matchLabels: { app: "bench" } },
        template: {
          metadata: { labels: { app: "bench" } },
          spec: {
            nodeSelector: { "kubernetes.io/hostname": nodeName },
            tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
            automountServiceAccountToken: false,
            containers: [{
              name: "main",
              image: "busybox",
              command: ["sleep", "3600"],
              resources: { requests: { cpu: "100m", memory: "100M" } },
            }],
          },
        },
      },
    };
    const started = performance.now();
    await kubectl(["apply", "-f", "-"], JSON.stringify(deployment));
    for (;;) {
      const list = await listPods();
      const running = list.filter((p) => p.status?.phase === "Running").length;
      if (running === pods) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const upMs = performance.now() - started;
    const deleting = performance.now();
    await kubectl(["delete", "deployment", "bench", "--wait=false"]);
    for (;;) {
      const left = (await listPods()).length;
      const groups = [...backend.emu.groups.values()].filter((g) =>
        g.body.tags?.["vkubelet-node"] === nodeName
      ).length;
      if (left === 0 && groups === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const downMs = performance.now() - deleting;
    const requests = backend.emu.requests.length;
    say(
      `vkubelet: all Running after ${(upMs / 1000).toFixed(1)} s, all gone after ${
        (downMs / 1000).toFixed(1)
      } s; ${requests} ACI requests through Prism`,
    );
    const before = backend.emu.requests.length;
    const f = await floor(backend.prism.url);
    say(
      `floor:    all Running after ${(f.upMs / 1000).toFixed(1)} s, all gone after ${
        (f.downMs / 1000).toFixed(1)
      } s; ${backend.emu.requests.length - before} ACI requests through Prism`,
    );
    say(`Prism violations: ${backend.violations().length}`);
    const after = await Deno.readTextFile("/proc/loadavg").catch(() => "unknown");
    say(`load average after: ${after.trim()}`);
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await backend.close();
  }
}
