/**
 * `deno run -A bench/scenarios/zun_capsules.ts [--pods=100] [--interval=1s] [--concurrency=10]`:
 * the zun provider on a real Zun (zun-api and zun-compute 18.0.0 on podman, MariaDB,
 * tools/harness/zun.ts) against the local control plane. Three runs of the same work, one after
 * the other: the floor, the same capsule bodies (the provider's own builder) sent straight to
 * zun-api `--concurrency` at a time, listed until all Running, deleted and listed until none is
 * left; the floor kubelet (bench/tools/floor_zun.ts: the apiserver path plus the same capsule
 * requests, as few as a kubelet can make); and vkubelet with `--pod-sync-workers` the same. Each
 * kubelet run is a Deployment of `--pods` replicas (`sleep 3600`, 0.1 cpu and 16 Mi each) timed
 * from apply to every pod Running, and from delete to every pod and capsule gone. Lifts the demo
 * project's quotas (40 containers by default) as admin first.
 * @module
 */
import { parseArgs } from "node:util";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { useZun, type ZunStack } from "../../tools/harness/zun.ts";
import { capsuleCreateBody, LABELS } from "../../providers/zun/request/capsule.ts";
import type { ZunApi } from "../../providers/zun/client/zun_api.ts";
import { capsulesOf, createCapsule, zunApiOf } from "../tools/floor_zun.ts";
import { startFloorKubelet, timeRollout } from "../tools/rollout.ts";

const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

async function until(what: string, check: () => Promise<boolean>, intervalMs: number) {
  const deadline = Date.now() + 30 * 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function benchPod(i: number, namespace: string): Pod {
  return {
    metadata: { namespace, name: `floor-${i}`, uid: crypto.randomUUID() },
    spec: {
      containers: [{
        name: "main",
        image: "localhost/busybox:latest",
        command: ["sleep", "3600"],
        resources: { limits: { cpu: "100m", memory: "16Mi" } },
      }],
    },
  };
}

/** Create → all Running → delete → all gone, straight through zun-api. */
async function floor(api: ZunApi, pods: number, intervalMs: number, concurrency: number) {
  const node = `floor-${crypto.randomUUID().slice(0, 6)}`;
  const started = performance.now();
  let retries = 0;
  let replaced = 0;
  const create = (i: number) =>
    createCapsule(
      api,
      capsuleCreateBody(benchPod(i, "bench"), { nodeName: node, exposePorts: false }),
      undefined,
      () => retries++,
    );
  for (let i = 0; i < pods; i += concurrency) {
    await Promise.all(
      Array.from({ length: Math.min(concurrency, pods - i) }, (_, k) => create(i + k)),
    );
  }
  await until("floor capsules Running", async () => {
    const now = await capsulesOf(api, node);
    // A capsule Zun failed (no host, placement conflicts under load) is replaced, as the
    // provider replaces a run that ended in Error.
    for (const failed of now.filter((c) => c.status === "Error")) {
      replaced++;
      await api.call("DELETE", `/capsules/${failed.uuid}`).catch(() => {});
      await create(Number(failed.labels?.[LABELS.name]?.replace("floor-", "")));
    }
    return now.filter((c) => c.status === "Running").length === pods;
  }, intervalMs);
  const running = performance.now() - started;
  const deleting = performance.now();
  // Every capsule of the floor's, the rows a failed create left included.
  const made = await capsulesOf(api, node);
  for (let i = 0; i < made.length; i += concurrency) {
    await Promise.all(
      made.slice(i, i + concurrency).map((c) => api.call("DELETE", `/capsules/${c.uuid}`)),
    );
  }
  await until(
    "floor capsules gone",
    async () => (await capsulesOf(api, node)).length === 0,
    intervalMs,
  );
  return { running, gone: performance.now() - deleting, retries, replaced };
}

/** Who runs the node (vkubelet or the floor kubelet): started on `nodeName`. */
interface Kubelet {
  start(cluster: TestCluster, nodeName: string): Promise<{ stop(): Promise<unknown> }>;
}

const vkubelet = (zun: ZunStack, pods: number, interval: string, workers: number): Kubelet => ({
  start: (cluster, nodeName) =>
    startVkubelet(cluster, {
      nodeName,
      provider: "zun",
      args: [`--pod-sync-workers=${workers}`],
      providerConfig: JSON.stringify({
        statusInterval: interval,
        exposePorts: false,
        capacity: { pods: String(pods + 10) },
      }),
      env: zun.env,
    }),
});

const floorKubelet = (
  zun: ZunStack,
  pods: number,
  intervalMs: number,
  workers: number,
): Kubelet => ({
  start: (cluster: TestCluster, nodeName: string) =>
    startFloorKubelet(cluster, nodeName, {
      capacity: { cpu: String(pods), memory: `${16 * pods}Gi`, pods: String(pods + 10) },
      concurrency: workers,
      zun: { env: zun.env, nodeName, intervalMs },
    }),
});

/** A Deployment of `pods` replicas on a node `kubelet` serves, to Running and deleted. */
async function throughNode(api: ZunApi, pods: number, intervalMs: number, kubelet: Kubelet) {
  const cluster = await useCluster();
  const nodeName = `vk-zun-bench-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("zun-bench");
  const node = await kubelet.start(cluster, nodeName);
  try {
    const t = await timeRollout({
      kubectl: cluster.kubectlIn(ns),
      nodeName,
      pods,
      image: "localhost/busybox:latest",
      requests: { cpu: "100m", memory: "16Mi" },
      terminationGracePeriodSeconds: 0,
      left: async () => (await capsulesOf(api, nodeName)).length,
      everyMs: intervalMs,
    });
    return { running: t.upMs, gone: t.downMs };
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]).catch(() => {});
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
    for (const c of await capsulesOf(api, nodeName).catch(() => [])) {
      await api.call("DELETE", `/capsules/${c.uuid}`).catch(() => {});
    }
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      pods: { type: "string", default: "100" },
      interval: { type: "string", default: "1s" },
      // creates (floor) and pod sync workers (both kubelets) at once
      concurrency: { type: "string", default: "10" },
    },
  });
  const pods = Number(values.pods);
  const concurrency = Number(values.concurrency);
  const intervalMs = Number(/^(\d+)s$/.exec(values.interval!)?.[1] ?? 1) * 1000;
  const zun = await useZun();
  try {
    const api = zunApiOf(zun.env);
    const project = await api.projectId();
    await zunApiOf(zun.adminEnv).call("PUT", `/quotas/${project}`, {
      body: { containers: 10 * pods, cpu: 10 * pods, memory: 1024 * pods },
    });
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    say(
      `zun_capsules: ${pods} pods, ${concurrency} at a time, every ${values.interval}; load: ${load}`,
    );
    const f = await floor(api, pods, intervalMs, concurrency);
    say(
      `floor (zun-api directly): create → all Running ${seconds(f.running)}; ` +
        `delete → all gone ${
          seconds(f.gone)
        }; ${f.retries} creates retried after a 5xx, ${f.replaced} capsules in Error replaced`,
    );
    const k = await throughNode(
      api,
      pods,
      intervalMs,
      floorKubelet(zun, pods, intervalMs, concurrency),
    );
    say(
      `floor kubelet (apiserver path + the same capsules): create → all Running ${
        seconds(k.running)
      }; delete → all gone, capsules gone ${seconds(k.gone)}`,
    );
    const v = await throughNode(
      api,
      pods,
      intervalMs,
      vkubelet(zun, pods, values.interval!, concurrency),
    );
    say(
      `vkubelet --provider zun: create → all Running ${seconds(v.running)}; ` +
        `delete → all gone, capsules gone ${seconds(v.gone)}`,
    );
    say(
      `ratio to zun-api directly: to Running ${(v.running / f.running).toFixed(2)}×, to gone ${
        (v.gone / f.gone).toFixed(2)
      }×; to the floor kubelet: ${(v.running / k.running).toFixed(2)}×, ${
        (v.gone / k.gone).toFixed(2)
      }×`,
    );
    const after = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    say(`load average after: ${after}`);
  } finally {
    await zun.stop();
  }
}
