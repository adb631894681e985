/**
 * The aci provider at scale: N pods (a Deployment on one virtual node) created until all are
 * Running, then deleted until every pod and container group is gone, against the ACI emulator
 * with Prism in the path (every request validated against Azure's specification). The floor is
 * a kubelet that does the least (bench/tools/floor.ts with ./../tools/floor_aci.ts): the same
 * Deployment on its node, a PUT per pod, GETs until its container runs, one status write; on
 * deletion a DELETE of the group and of the pod — the apiserver path a kubelet must take and the
 * ACI requests, so that the ratio compares the same work. "ACI alone" sends only the ACI requests,
 * directly, 16 at a time. The emulator enforces Azure Resource Manager's documented limits per
 * subscription (tools/harness/aci/arm_limits.ts: reads 250 + 25/s, writes and deletes 200 + 10/s)
 * on both kubelets; vkubelet's pods are held Running for `hold` seconds, and its ARM reads per
 * minute, the 429s and each group's longest gap between reads (its status's age) are printed.
 * Prints the figures; no assertion.
 * Run: `deno run -A bench/scenarios/aci_pods.ts [pods=1000] [statusInterval=2s] [hold=75]
 * [alone=yes]`.
 * @module
 */
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { aciConfig, startBackend } from "../../tools/harness/aci/env.ts";
import type { AciEmulator } from "../../tools/harness/aci/emulator.ts";
import { ArmLimits } from "../../tools/harness/aci/arm_limits.ts";
import { parseAciConfig } from "../../providers/aci/config.ts";
import { createAciClient } from "../../providers/aci/azure.ts";
import { AciGroups } from "../../providers/aci/client/groups.ts";
import { startFloorKubelet, timeRollout } from "../tools/rollout.ts";

const pods = Number(Deno.args[0] ?? 1000);
const interval = Deno.args[1] ?? "2s";
const holdS = Number(Deno.args[2] ?? 75);
const alone = (Deno.args[3] ?? "yes") === "yes";
const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

async function pool(n: number, work: (i: number) => Promise<void>, width = 16) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await work(next++);
  }));
}

/** ACI alone: the same PUT, GET and DELETE requests, sent directly (no apiserver in the path). */
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

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The most of `times` (ms, ascending) in any window of `windowMs`. */
function mostIn(times: number[], windowMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[j] - times[i] >= windowMs) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

/** ARM reads of requests `from`..`to`: most a minute and in 10 s, and each group's longest gap. */
function readFigures(emu: AciEmulator, from: number, to: number) {
  const reads: number[] = [];
  const byGroup = new Map<string, number[]>();
  for (let i = from; i < to; i++) {
    const [method, path] = emu.requests[i].split(" ");
    if (method !== "GET") continue;
    reads.push(emu.requestTimes[i]);
    const group = path.match(/\/containerGroups\/([^/]+)$/)?.[1];
    if (group) byGroup.set(group, [...(byGroup.get(group) ?? []), emu.requestTimes[i]]);
  }
  let gapMs = 0;
  for (const times of byGroup.values()) {
    for (let i = 1; i < times.length; i++) gapMs = Math.max(gapMs, times[i] - times[i - 1]);
  }
  const spanMin = reads.length ? (reads.at(-1)! - reads[0]) / 60_000 : 0;
  return {
    reads: reads.length,
    perMinute: mostIn(reads, 60_000),
    per10s: mostIn(reads, 10_000),
    meanPerMinute: spanMin > 0 ? Math.round(reads.length / spanMin) : reads.length,
    gapMs,
  };
}

function diff(a: Record<string, number>, b: Record<string, number>) {
  return Object.fromEntries(Object.keys(a).map((k) => [k, a[k] - (b[k] ?? 0)]));
}

if (import.meta.main) {
  const load = await Deno.readTextFile("/proc/loadavg").catch(() => "unknown");
  say(`aci_pods: ${pods} pods, statusInterval ${interval}, load average before: ${load.trim()}`);
  const cluster = await useCluster();
  // metrics-server scraping the node makes vkubelet read Azure Monitor too (ARM reads).
  const scraped = (await cluster.kubectl(["get", "apiservice", "v1beta1.metrics.k8s.io"])).code;
  say(`metrics-server in the cluster: ${scraped === 0 ? "yes, scraping every node" : "no"}`);
  const backend = await startBackend();
  const suffix = crypto.randomUUID().slice(0, 6);
  const groupsOf = (node: string) =>
    [...backend.emu.groups.values()].filter((g) => g.body.tags?.["vkubelet-node"] === node)
      .length;
  const requests = { cpu: "100m", memory: "100M" };
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    // vkubelet with the aci provider.
    const nodeName = `vk-aci-bench-${suffix}`;
    const ns = await cluster.newNamespace("aci-bench");
    const node = await startVkubelet(cluster, {
      nodeName,
      provider: "aci",
      providerConfig: JSON.stringify(
        aciConfig(backend.prism.url, {
          statusInterval: interval,
          steadyStatusInterval: "60s",
          // Azure Monitor's metrics straight to the emulator: Prism has no description for them.
          monitorEndpoint: backend.emu.url,
          metricsInterval: "60s",
          capacity: { cpu: "2000", memory: "4000Gi", pods: String(pods + 10) },
        }),
      ),
    });
    cleanups.push(
      () => node.stop(),
      () => cluster.kubectl(["delete", "node", nodeName, "--wait=false"]),
      () => cluster.kubectl(["delete", "namespace", ns, "--wait=false"]),
    );
    let before = backend.emu.requests.length;
    const refused = () => ({ ...backend.emu.armLimits!.refused });
    const refusedBefore = refused();
    let held: ReturnType<typeof readFigures> | undefined;
    const v = await timeRollout({
      kubectl: cluster.kubectlIn(ns),
      nodeName,
      pods,
      requests,
      left: () => groupsOf(nodeName),
      // Once all run: hold them, so that every group is read while steady, then take the reads.
      afterUp: async () => {
        await new Promise((r) => setTimeout(r, holdS * 1000));
        held = readFigures(backend.emu, before, backend.emu.requests.length);
      },
    });
    const all = readFigures(backend.emu, before, backend.emu.requests.length);
    say(
      `vkubelet: all Running after ${seconds(v.upMs)}, all gone after ${seconds(v.downMs)}; ${
        backend.emu.requests.length - before
      } ACI requests through Prism`,
    );
    say(
      `vkubelet ARM reads: ${all.reads}; most in a minute ${all.perMinute} (limit 1,500 at 25/s, ` +
        `vkubelet's budget 1,200), most in 10 s ${all.per10s} (limit 500), mean ` +
        `${all.meanPerMinute}/min; 429s ${JSON.stringify(diff(refused(), refusedBefore))}`,
    );
    if (held) {
      say(
        `vkubelet up and held ${holdS} s: longest gap between reads of one group ${
          seconds(held.gapMs)
        } (the status's oldest age); ${held.reads} reads`,
      );
    }
    await node.stop();

    // The floor: the apiserver path a kubelet must take, and the same ACI requests.
    const floorNode = `vk-aci-floor-${suffix}`;
    const floorNs = await cluster.newNamespace("aci-floor");
    const floorKubelet = await startFloorKubelet(cluster, floorNode, {
      capacity: { cpu: "2000", memory: "4000Gi", pods: String(pods + 10) },
      aci: { endpoint: backend.prism.url, resourceGroup: "vk-test", nodeName: floorNode },
    });
    cleanups.push(
      () => floorKubelet.stop(),
      () => cluster.kubectl(["delete", "node", floorNode, "--wait=false"]),
      () => cluster.kubectl(["delete", "namespace", floorNs, "--wait=false"]),
    );
    before = backend.emu.requests.length;
    const floorRefusedBefore = refused();
    const f = await timeRollout({
      kubectl: cluster.kubectlIn(floorNs),
      nodeName: floorNode,
      pods,
      requests,
      left: () => groupsOf(floorNode),
    });
    say(
      `floor:    all Running after ${seconds(f.upMs)}, all gone after ${seconds(f.downMs)}; ${
        backend.emu.requests.length - before
      } ACI requests through Prism; 429s ${JSON.stringify(diff(refused(), floorRefusedBefore))}`,
    );
    say(
      `ratio:    to Running ${(v.upMs / f.upMs).toFixed(2)}×, to gone ${
        (v.downMs / f.downMs).toFixed(2)
      }×`,
    );

    // ACI alone: the same requests sent directly, no apiserver (the earlier floor); ARM's
    // limits off, as it paces nothing.
    if (alone) {
      backend.emu.armLimits = undefined;
      before = backend.emu.requests.length;
      const direct = await floor(backend.prism.url);
      say(
        `ACI alone (no ARM limits): all Running after ${seconds(direct.upMs)}, all gone after ${
          seconds(direct.downMs)
        }; ${backend.emu.requests.length - before} ACI requests through Prism`,
      );
      backend.emu.armLimits = new ArmLimits();
    }
    say(`Prism violations: ${backend.violations().length}`);
    const after = await Deno.readTextFile("/proc/loadavg").catch(() => "unknown");
    say(`load average after: ${after.trim()}`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await backend.close();
  }
}
