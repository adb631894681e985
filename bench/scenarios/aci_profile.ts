/**
 * Where an aci pod's time goes, at a small count (the machine is shared; this is not the
 * 1,000-pod bench): N pods of a Deployment on one virtual node, against the ACI emulator behind
 * Prism. Prints, from the pods' creation times, the emulator's request log and vkubelet's own
 * `/metrics`: created → PUT sent (min, median, max), how long the PUTs took to arrive over all
 * pods, the status GETs per round and in all, and vkubelet's work-queue and pod-start histograms.
 * Run: `deno run -A bench/scenarios/aci_profile.ts [pods=50] [statusInterval=2s]`.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../tools/cluster/harness.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { aciConfig, startBackend } from "../../tools/harness/aci/env.ts";

const pods = Number(Deno.args[0] ?? 50);
const interval = Deno.args[1] ?? "2s";
const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
const pct = (xs: number[], p: number) =>
  xs.toSorted((a, b) => a - b)[Math.floor((xs.length - 1) * p)];
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** The histogram's count, sum and mean from Prometheus text (`name{labels}` as given). */
function histogram(text: string, series: string) {
  const value = (suffix: string) =>
    Number(
      text.split("\n").find((l) => l.startsWith(series.replace("{", `${suffix}{`)))?.split(" ").at(
        -1,
      ) ?? NaN,
    );
  const count = value("_count"), sum = value("_sum");
  return `${count} items, mean ${(sum / count).toFixed(3)} s`;
}

if (import.meta.main) {
  say(
    `aci_profile: ${pods} pods, statusInterval ${interval}, load ${
      (await Deno.readTextFile("/proc/loadavg")).trim()
    }`,
  );
  const cluster = await useCluster();
  const backend = await startBackend();
  const nodeName = `vk-aci-prof-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("aci-prof");
  const kubectl = cluster.kubectlIn(ns);
  const metricsPort = 20000 + Math.floor(Math.random() * 20000);
  const node = await startVkubelet(cluster, {
    nodeName,
    provider: "aci",
    args: ["--metrics-addr", `127.0.0.1:${metricsPort}`],
    providerConfig: JSON.stringify(aciConfig(backend.prism.url, {
      statusInterval: interval,
      capacity: { cpu: "2000", memory: "4000Gi", pods: String(pods + 10) },
    })),
  });
  try {
    const template = {
      metadata: { labels: { app: "prof" } },
      spec: {
        nodeSelector: { "kubernetes.io/hostname": nodeName },
        tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
        automountServiceAccountToken: false,
        containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
      },
    };
    const startedAt = Date.now();
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "prof" },
        spec: { replicas: pods, selector: { matchLabels: { app: "prof" } }, template },
      }),
    );
    let list: Pod[] = [];
    for (;;) {
      list = JSON.parse(await kubectl(["get", "pods", "-o", "json"])).items;
      if (list.filter((p) => p.status?.phase === "Running").length === pods) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const upMs = Date.now() - startedAt;
    const { requests, requestTimes } = backend.emu;
    const puts = requests.map((r, i) => [r, requestTimes[i]] as const).filter(([r]) =>
      r.startsWith("PUT ")
    );
    const putAt = new Map(puts.map(([r, t]) => [r.split("/").at(-1)!, t]));
    const lags: number[] = [];
    for (const p of list) {
      const group = [...backend.emu.groups.values()].find((g) =>
        g.body.tags?.["vkubelet-pod"] === p.metadata?.name
      );
      const sent = group && putAt.get(group.name);
      if (sent) lags.push(sent - Date.parse(p.metadata!.creationTimestamp!));
    }
    const gets = requests.filter((r) =>
      r.startsWith("GET ") && /containerGroups\/[^/]+$/.test(r)
    ).length;
    say(
      `all Running after ${
        sec(upMs)
      }; ${requests.length} ACI requests (${puts.length} PUT, ${gets} GET of one group)`,
    );
    say(
      `created -> PUT sent (creationTimestamp has 1 s resolution): min ${
        sec(pct(lags, 0))
      }, median ${sec(pct(lags, 0.5))}, max ${sec(pct(lags, 1))}`,
    );
    say(
      `first PUT ${sec(puts[0][1] - startedAt)} after apply, last ${
        sec(puts.at(-1)![1] - startedAt)
      }`,
    );
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    for (
      const line of metrics.split("\n").filter((l) =>
        /^workqueue_(queue|work)_duration_seconds_count/.test(l)
      )
    ) {
      const series = line.split(" ")[0].replace("_count", "");
      say(`${series}: ${histogram(metrics, series)}`);
    }
    say(
      `kubelet_pod_start_duration_seconds: ${
        histogram(metrics, "kubelet_pod_start_duration_seconds{")
      }`,
    );
    say(`rest_client_requests_total: ${
      metrics.split("\n").filter((l) => l.startsWith("rest_client_requests_total")).join("; ")
    }`);
    await kubectl(["delete", "deployment", "prof", "--wait=false"]);
    const deleting = Date.now();
    for (;;) {
      const left = JSON.parse(await kubectl(["get", "pods", "-o", "json"])).items.length;
      if (left === 0) {
        break;
      }
      await new Promise((r) =>
        setTimeout(r, 500)
      );
    }
    const dels = requests.map((r, i) => [r, requestTimes[i]] as const).filter(([r]) =>
      r.startsWith("DELETE ")
    );
    say(
      `all gone after ${sec(Date.now() - deleting)}; DELETEs from ${
        sec(dels[0][1] - deleting)
      } to ${sec(dels.at(-1)![1] - deleting)}`,
    );
    say(`Prism violations: ${backend.violations().length}`);
  } finally {
    await node.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await backend.close();
  }
}
