/**
 * Pod start time with and without CNI: N pods (default 100) bound to one vkubelet node (process
 * provider) in a test host of the network lab (tools/netlab/), once with the host's network and
 * once with the `network` section (bridge + host-local + portmap, each pod its own namespace and
 * IP), on the lab's private control plane. Per pod: from the create (one `kubectl apply` of all N)
 * to the first poll that sees it Ready (polled every 250 ms); then the time until all N are
 * gone after one delete. Writes `bench/reports/CNI.md`. Root only.
 *
 * ```sh
 * deno run -A bench/scenarios/cni_pods.ts [--pods 100]
 * ```
 * @module
 */
import { useCluster } from "../../tools/cluster/harness.ts";
import { makeHosts, NETLAB_ADDRESSES } from "../../tools/netlab/hosts.ts";
import { NETLAB_CLUSTER } from "../../tools/netlab/lab.ts";
import { startNetlabNode } from "../../tools/netlab/node.ts";
import { run } from "../../tools/netlab/command.ts";
import { killPodProcesses } from "../../tools/netlab/sweep.ts";
import { cpuSeconds, machine } from "../tools/proc.ts";

const repoRoot = new URL("../../", import.meta.url).pathname;

/** What one variant measured. */
interface VariantResult {
  variant: string;
  pods: number;
  allReadyS: number;
  p50S: number;
  p99S: number;
  deleteS: number;
  vkubeletCpuS: number;
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function measure(variant: "host network" | "CNI", pods: number): Promise<VariantResult> {
  const cluster = await useCluster(NETLAB_CLUSTER, {
    serviceRange: NETLAB_ADDRESSES.serviceRange,
  });
  const dir = await Deno.makeTempDir({ prefix: "vk-bench-cni-" });
  const hosts = await makeHosts({ dir, prefix: `vkb${Deno.pid % 100000}`, server: cluster.server });
  const host = hosts.hosts[0];
  const cniBinDir = await run(["bash", `${repoRoot}tools/network/build_cni.sh`]);
  const nodeName = `vkbench-cni-${variant === "CNI" ? "on" : "off"}`;
  const node = await startNetlabNode(cluster, host, {
    nodeName,
    cniBinDir,
    // Without the section the provider leaves pods in the host's network.
    providerConfig: variant === "CNI" ? {} : { network: undefined },
  });
  const ns = await cluster.newNamespace("bench-cni");
  const kubectl = cluster.kubectlIn(ns);
  try {
    const items = Array.from({ length: pods }, (_, i) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: `p${i}` },
      spec: {
        nodeName,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: "main", image: "sleep", command: ["/bin/sleep", "3600"] }],
      },
    }));
    const cpuBefore = cpuSeconds(node.process.pid);
    const started = performance.now();
    await kubectl(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
    const readyAt = new Map<string, number>();
    while (readyAt.size < pods) {
      if (performance.now() - started > 600_000) throw new Error(`only ${readyAt.size} Ready`);
      const out = await kubectl([
        "get",
        "pods",
        "-o",
        'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}',
      ]);
      const now = (performance.now() - started) / 1000;
      for (const entry of out.trim().split(" ")) {
        const [name, ready] = entry.split("=");
        if (ready === "True" && !readyAt.has(name)) readyAt.set(name, now);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const times = [...readyAt.values()].sort((a, b) => a - b);
    const deleting = performance.now();
    await kubectl(["delete", "pods", "--all", "--wait=true", "--timeout=600s"]);
    const deleteS = (performance.now() - deleting) / 1000;
    return {
      variant,
      pods,
      allReadyS: times.at(-1)!,
      p50S: quantile(times, 0.5),
      p99S: quantile(times, 0.99),
      deleteS,
      vkubeletCpuS: cpuSeconds(node.process.pid) - cpuBefore,
    };
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=true", "--timeout=120s"]);
    await node.process.stop();
    await killPodProcesses(node.stateDir);
    await cluster.kubectl(["delete", "node", nodeName, "--ignore-not-found"]);
    await hosts.remove();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

function report(results: VariantResult[]): string {
  const f = (s: number) => s.toFixed(1);
  const [off, on] = results;
  const m = machine();
  return [
    "# Pod start time with and without CNI (process provider)",
    "",
    `Written by \`bench/scenarios/cni_pods.ts\` on ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, load ${m.load}.`,
    "",
    `${on.pods} pods (\`/bin/sleep\`, no probes) bound to one vkubelet node in a test host of the`,
    "network lab, created by one `kubectl apply`; a pod's time runs from the apply to the first",
    "poll (every 250 ms) that sees it Ready. CNI: bridge + host-local + portmap (reference plugins),",
    "loopback, one network namespace per pod.",
    "",
    "| variant | all Ready (s) | p50 (s) | p99 (s) | delete all (s) | vkubelet CPU (s) |",
    "| --- | --- | --- | --- | --- | --- |",
    ...results.map((r) =>
      `| ${r.variant} | ${f(r.allReadyS)} | ${f(r.p50S)} | ${f(r.p99S)} | ${f(r.deleteS)} | ${
        f(r.vkubeletCpuS)
      } |`
    ),
    "",
    `CNI adds ${f(on.allReadyS - off.allReadyS)} s to starting all ${on.pods} ` +
    `(${f((on.allReadyS - off.allReadyS) * 1000 / on.pods)} ms a pod on average), ` +
    `${f(on.p50S - off.p50S)} s to the median pod and ${f(on.deleteS - off.deleteS)} s to ` +
    "deleting them all: a network namespace, the plugins' ADD (DEL) and a cached result per pod. " +
    "One run each; the load average says how busy the machine was.",
    "",
  ].join("\n");
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--pods");
  const pods = i >= 0 ? Number(Deno.args[i + 1]) : 100;
  const results: VariantResult[] = [];
  for (const variant of ["host network", "CNI"] as const) {
    console.error(`${variant}: ${pods} pods`);
    results.push(await measure(variant, pods));
    console.error(JSON.stringify(results.at(-1)));
  }
  const text = report(results);
  await Deno.writeTextFile(`${repoRoot}bench/reports/CNI.md`, text);
  console.log(text);
}
