/**
 * `deno run -A bench/scenarios/zun_capsules.ts [--pods=100] [--interval=1s]`: the zun provider on
 * a real Zun (zun-api and zun-compute 18.0.0 on podman, tools/harness/zun.ts) against the local
 * control plane. Measures, for a Deployment of `--pods` replicas (`sleep 3600`, 0.1 cpu and 16 Mi
 * each): create → every pod Running (its capsule Running), and delete → every pod gone and every
 * capsule gone; and the floor: the same capsule bodies (the provider's own builder) sent straight
 * to zun-api, listed until all Running, deleted and listed until none is left, with the same
 * interval. Lifts the demo project's quotas (40 containers by default) as admin first.
 * @module
 */
import { parseArgs } from "node:util";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { useZun, type ZunStack } from "../../tools/harness/zun.ts";
import { capsuleCreateBody, LABELS } from "../../providers/zun/capsule.ts";
import { loadCredentials } from "../../providers/zun/credentials.ts";
import type { ZunCapsule } from "../../providers/zun/status.ts";
import { ZunApi, ZunApiError } from "../../providers/zun/zun_api.ts";

const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));

function apiAs(env: Record<string, string>): ZunApi {
  return new ZunApi({
    credentials: loadCredentials(undefined, {
      env: (n) => env[n],
      readFile: () => undefined,
      cwd: "/",
    }),
    serviceType: "container",
    requestTimeoutMs: 120_000,
  });
}

async function until(what: string, check: () => Promise<boolean>, intervalMs: number) {
  const deadline = Date.now() + 30 * 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

async function capsulesOf(api: ZunApi, node: string): Promise<ZunCapsule[]> {
  const { body } = await api.call<{ capsules: ZunCapsule[] }>("GET", "/capsules/?limit=1000");
  return body.capsules.filter((c) => c.labels?.[LABELS.node] === node);
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
  // A 5xx (sqlite busy in placement, under load) is retried, as the core retries the provider.
  const create = async (i: number): Promise<void> => {
    for (let attempt = 0;; attempt++) {
      try {
        await api.call<ZunCapsule>("POST", "/capsules", {
          body: capsuleCreateBody(benchPod(i, "bench"), { nodeName: node, exposePorts: false }),
        });
        return;
      } catch (err) {
        if (!(err instanceof ZunApiError) || err.status < 500 || attempt >= 5) throw err;
        retries++;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  };
  for (let i = 0; i < pods; i += concurrency) {
    await Promise.all(
      Array.from({ length: Math.min(concurrency, pods - i) }, (_, k) => create(i + k)),
    );
  }
  await until("floor capsules Running", async () => {
    const now = await capsulesOf(api, node);
    // A capsule Zun failed (sqlite busy, placement conflicts under load) is replaced, as the
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

/** The same through vkubelet: a Deployment of `pods` replicas, then deleted. */
async function throughVkubelet(
  zun: ZunStack,
  api: ZunApi,
  pods: number,
  interval: string,
  intervalMs: number,
  concurrency: number,
) {
  const cluster = await useCluster();
  const nodeName = `vk-zun-bench-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("zun-bench");
  const kubectl = cluster.kubectlIn(ns);
  const node = await startVkubelet(cluster, {
    nodeName,
    provider: "zun",
    args: [`--pod-sync-workers=${concurrency}`],
    providerConfig: JSON.stringify({
      statusInterval: interval,
      exposePorts: false,
      capacity: { pods: String(pods + 10) },
    }),
    env: zun.env,
  });
  const running = async () =>
    (JSON.parse(await kubectl(["get", "pods", "-o", "json"])).items as Pod[])
      .filter((p) => p.status?.phase === "Running").length;
  const all = async () =>
    (JSON.parse(await kubectl(["get", "pods", "-o", "json"])).items as Pod[]).length;
  try {
    const started = performance.now();
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
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
              terminationGracePeriodSeconds: 0,
              automountServiceAccountToken: false,
              enableServiceLinks: false,
              containers: [{
                name: "main",
                image: "localhost/busybox:latest",
                command: ["sleep", "3600"],
                resources: { limits: { cpu: "100m", memory: "16Mi" } },
              }],
            },
          },
        },
      }),
    );
    await until("pods Running", async () => (await running()) === pods, intervalMs);
    const up = performance.now() - started;
    const deleting = performance.now();
    await kubectl(["delete", "deployment", "bench", "--wait=false"]);
    await until(
      "pods and capsules gone",
      async () => (await all()) === 0 && (await capsulesOf(api, nodeName)).length === 0,
      intervalMs,
    );
    return { running: up, gone: performance.now() - deleting };
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]).catch(() => {});
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
    for (const c of await capsulesOf(api, nodeName).catch(() => [])) {
      await api.call("DELETE", `/capsules/${c.uuid}`).catch(() => {});
    }
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      pods: { type: "string", default: "100" },
      interval: { type: "string", default: "1s" },
      // sqlite under eventlet serialises Zun's writes: ten creates at once left a third of them in
      // Error ("database is locked", placement conflicts); both sides send this many at a time.
      concurrency: { type: "string", default: "2" },
    },
  });
  const pods = Number(values.pods);
  const concurrency = Number(values.concurrency);
  const intervalMs = Number(/^(\d+)s$/.exec(values.interval!)?.[1] ?? 1) * 1000;
  const zun = await useZun();
  try {
    const api = apiAs(zun.env);
    const project = await api.projectId();
    await apiAs(zun.adminEnv).call("PUT", `/quotas/${project}`, {
      body: { containers: 10 * pods, cpu: 10 * pods, memory: 1024 * pods },
    });
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    say(
      `zun_capsules: ${pods} pods, ${concurrency} at a time, every ${values.interval}; load: ${load}`,
    );
    const f = await floor(api, pods, intervalMs, concurrency);
    say(
      `floor (zun-api directly): create → all Running ${(f.running / 1000).toFixed(1)} s; ` +
        `delete → all gone ${
          (f.gone / 1000).toFixed(1)
        } s; ${f.retries} creates retried after a 5xx, ${f.replaced} capsules in Error replaced`,
    );
    const v = await throughVkubelet(zun, api, pods, values.interval!, intervalMs, concurrency);
    say(
      `vkubelet --provider zun: create → all Running ${(v.running / 1000).toFixed(1)} s; ` +
        `delete → all gone, capsules gone ${(v.gone / 1000).toFixed(1)} s`,
    );
    const after = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    say(`load average after: ${after}`);
  } finally {
    await zun.stop();
  }
}
