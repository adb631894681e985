/**
 * Node-side cost against the real control plane, as a real node identity with the mock
 * provider: time from start to Ready (median of 5 fresh registrations and of 5 restarts of an
 * existing node), then API writes per minute at steady state, counted through the NodeApi.
 *
 *     deno run -A bench/scenarios/node_writes.ts [--seconds=65]
 *
 * Brings the test cluster up if it is down (`deno task cluster up`).
 * @module
 */
import { parseArgs } from "node:util";
import { KubeClient } from "../../k8s/client.ts";
import { realClock } from "../../base/clock.ts";
import { getLogger } from "../../base/log.ts";
import {
  countingNodeApi,
  HealthMonitor,
  LeaseController,
  NODE_API_WRITES,
  type NodeApi,
  nodeApiFromClient,
  NodeController,
} from "../../core/node/mod.ts";
import { createProvider } from "../../providers/mock/mod.ts";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";

const encoder = new TextEncoder();
const say = (line: string) => Deno.stdout.writeSync(encoder.encode(line + "\n"));
const log = getLogger(["vkubelet", "bench"]);

interface Started {
  /** The node controller's `ready`: the Node exists and carries our status. */
  ready: Promise<void>;
  stop(): Promise<void>;
}

/** Starts health, node and lease for `nodeName` over `api`. */
function startNodeSide(nodeName: string, api: NodeApi): Started {
  const controller = new AbortController();
  const provider = createProvider(undefined, {
    nodeName,
    log,
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: controller.signal,
  });
  const deps = { api, clock: realClock, log };
  const health = new HealthMonitor({ ...deps, provider });
  const node = new NodeController({
    ...deps,
    provider,
    health,
    nodeName,
    version: "bench",
    providerName: "mock",
    internalIp: "127.0.0.1",
  });
  const lease = new LeaseController({ ...deps, health, nodeName, owner: node });
  const running = Promise.all([
    health.run(controller.signal),
    node.run(controller.signal),
    lease.run(controller.signal),
  ]);
  return {
    ready: node.ready,
    async stop() {
      controller.abort();
      await running;
      await provider.close?.();
    },
  };
}

/**
 * Milliseconds from start until the node controller is ready (its status written) and the
 * admin sees Ready=True (polled every 20 ms).
 */
async function timeToReady(admin: KubeClient, nodeName: string, api: NodeApi): Promise<number> {
  const started = performance.now();
  const side = startNodeSide(nodeName, api);
  try {
    await side.ready;
    for (;;) {
      const node = await admin.nodes.get(nodeName).catch(() => undefined);
      const ready = node?.status?.conditions?.find((c) => c.type === "Ready");
      if (ready?.status === "True") return performance.now() - started;
      if (performance.now() - started > 30_000) throw new Error(`${nodeName} not Ready in 30 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await side.stop();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function deleteNode(cluster: TestCluster, name: string): Promise<void> {
  await cluster.kubectl(["delete", "node", name, "--ignore-not-found"]);
  await cluster.kubectl(["-n", "kube-node-lease", "delete", "lease", name, "--ignore-not-found"]);
}

async function measureStarts(cluster: TestCluster, admin: KubeClient): Promise<void> {
  const fresh: number[] = [];
  const restart: number[] = [];
  for (let i = 0; i < 5; i++) {
    const name = `vk-bench-${crypto.randomUUID().slice(0, 6)}`;
    using client = await KubeClient.fromConfig({
      kubeconfig: await cluster.nodeKubeconfig(name),
      env: {},
    });
    const api = nodeApiFromClient(client);
    try {
      fresh.push(await timeToReady(admin, name, api));
      restart.push(await timeToReady(admin, name, api));
    } finally {
      await deleteNode(cluster, name);
    }
  }
  const show = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
  say(`start to Ready, new node:      median ${median(fresh).toFixed(0)} ms (${show(fresh)})`);
  say(`start to Ready, existing node: median ${median(restart).toFixed(0)} ms (${show(restart)})`);
}

async function measureWrites(cluster: TestCluster, seconds: number): Promise<void> {
  const name = `vk-bench-${crypto.randomUUID().slice(0, 6)}`;
  using client = await KubeClient.fromConfig({
    kubeconfig: await cluster.nodeKubeconfig(name),
    env: {},
  });
  const { api, counts } = countingNodeApi(nodeApiFromClient(client));
  const side = startNodeSide(name, api);
  try {
    // Registration writes (create node, create lease) are not steady state.
    await new Promise((r) => setTimeout(r, 2_000));
    const before = new Map(counts);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const minutes = seconds / 60;
    let total = 0;
    const parts: string[] = [];
    for (const call of NODE_API_WRITES) {
      const n = (counts.get(call) ?? 0) - (before.get(call) ?? 0);
      total += n;
      if (n > 0) parts.push(`${call} ${(n / minutes).toFixed(1)}`);
    }
    const reads = (counts.get("getNode") ?? 0) - (before.get("getNode") ?? 0);
    say(
      `steady state over ${seconds} s: ${(total / minutes).toFixed(1)} writes/min ` +
        `(${parts.join(", ")}); ${(reads / minutes).toFixed(1)} cached node reads/min`,
    );
  } finally {
    await side.stop();
    await deleteNode(cluster, name);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { seconds: { type: "string" } } });
  const seconds = Number(values.seconds ?? 65);
  const cluster = await useCluster();
  using admin = await KubeClient.fromConfig({ kubeconfig: cluster.kubeconfigPath, env: {} });
  await measureStarts(cluster, admin);
  await measureWrites(cluster, seconds);
}
