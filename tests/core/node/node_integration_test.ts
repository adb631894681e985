/**
 * The node side against the real control plane, running as a real node identity
 * (`system:node:<name>`, under the Node authorizer and NodeRestriction).
 * @module
 */
import assert from "node:assert/strict";
import type { Node } from "kubernetes-types/core/v1.d.ts";
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import { KubeClient } from "../../../k8s/client.ts";
import { realClock } from "../../../base/clock.ts";
import {
  HealthMonitor,
  LeaseController,
  NodeController,
  type NodeControllerDeps,
} from "../../../core/node/mod.ts";
import { type TestCluster, useCluster } from "../../../tools/cluster/harness.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { FakeNodeProvider, type LogRecord, recordingLogger } from "./fakes.ts";

interface Running {
  node: NodeController;
  lease: LeaseController;
  records: LogRecord[];
  startedAt: number;
  stop(): Promise<void>;
}

/** Runs the three node parts in-process with a client that is the node itself. */
async function start(
  cluster: TestCluster,
  nodeName: string,
  options: {
    provider?: FakeNodeProvider;
    node?: Partial<NodeControllerDeps>;
    pingIntervalMs?: number;
  } = {},
): Promise<Running> {
  const kubeconfig = await cluster.nodeKubeconfig(nodeName);
  const client = await KubeClient.fromConfig({ kubeconfig, env: {} });
  const provider = options.provider ?? new FakeNodeProvider();
  const { log, records } = recordingLogger();
  const clock = realClock;
  const startedAt = Date.now();
  const health = new HealthMonitor({
    provider,
    clock,
    log,
    pingIntervalMs: options.pingIntervalMs,
  });
  const node = new NodeController({
    client,
    provider,
    clock,
    log,
    health,
    nodeName,
    version: "0.1.0-test",
    providerName: "mock",
    internalIp: "127.0.0.1",
    ...options.node,
  });
  const lease = new LeaseController({ client, clock, log, health, nodeName, owner: node });
  const controller = new AbortController();
  const running = Promise.all([
    health.run(controller.signal),
    node.run(controller.signal),
    lease.run(controller.signal),
  ]);
  return {
    node,
    lease,
    records,
    startedAt,
    async stop() {
      controller.abort();
      await running;
      client.close();
    },
  };
}

/** kubectl's JSON of an object, with the managed fields it hides by default. */
const AS_STORED = ["-o", "json", "--show-managed-fields"];

async function getNode(cluster: TestCluster, name: string): Promise<Node | undefined> {
  const out = await cluster.kubectl(["get", "node", name, ...AS_STORED]);
  return out.code === 0 ? JSON.parse(out.stdout) : undefined;
}

async function getLease(cluster: TestCluster, name: string): Promise<Lease | undefined> {
  const out = await cluster.kubectl(["-n", "kube-node-lease", "get", "lease", name, ...AS_STORED]);
  return out.code === 0 ? JSON.parse(out.stdout) : undefined;
}

const ready = (node: Node | undefined) =>
  node?.status?.conditions?.find((c) => c.type === "Ready")?.status;

/** Polls `check` every 200 ms until it returns a value other than undefined/false. */
function waitFor<T>(what: string, timeoutMs: number, check: () => Promise<T>): Promise<T> {
  return eventually(what, check, timeoutMs, 200);
}

function uniqueNodeName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 6)}`;
}

async function deleteNode(cluster: TestCluster, name: string): Promise<void> {
  await cluster.kubectl(["delete", "node", name, "--ignore-not-found", "--wait=false"]);
  await cluster.kubectl([
    "-n",
    "kube-node-lease",
    "delete",
    "lease",
    name,
    "--ignore-not-found",
    "--wait=false",
  ]);
}

Deno.test("node is Ready within 5 s of start and its lease keeps being renewed", async () => {
  const cluster = await useCluster();
  const name = uniqueNodeName("vk-ready");
  const running = await start(cluster, name);
  try {
    const node = await waitFor("Ready=True", 5_000, async () => {
      const node = await getNode(cluster, name);
      return ready(node) === "True" ? node : undefined;
    });
    const elapsed = Date.now() - running.startedAt;
    assert.ok(elapsed <= 5_000, `Ready after ${elapsed} ms`);
    // The node identity may not set kubernetes.io/role: registered without it, one warning.
    assert.equal(node!.metadata?.labels?.["kubernetes.io/role"], undefined);
    assert.equal(node!.metadata?.labels?.type, "virtual-kubelet");
    assert.equal(running.records.filter((r) => /NodeRestriction/.test(r.message)).length, 1);
    assert.deepEqual(node!.spec?.taints?.find((t) => t.key === "virtual-kubelet.io/provider"), {
      key: "virtual-kubelet.io/provider",
      value: "mock",
      effect: "NoSchedule",
    });
    assert.equal(node!.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250);

    const first = await waitFor("the lease", 5_000, () => getLease(cluster, name));
    assert.match(first!.spec!.renewTime!, /\.\d{6}Z$/);
    assert.equal(first!.metadata?.ownerReferences?.[0]?.uid, node!.metadata?.uid);
    const renewed = await waitFor("a lease renewal", 15_000, async () => {
      const lease = await getLease(cluster, name);
      return lease?.spec?.renewTime !== first!.spec!.renewTime ? lease : undefined;
    });
    const gap = Date.parse(renewed!.spec!.renewTime!) - Date.parse(first!.spec!.renewTime!);
    assert.ok(gap >= 9_500 && gap <= 11_500, `renewed after ${gap} ms`);
    // The server keeps who wrote what; the controllers keep the objects without it.
    assert.ok(renewed!.metadata?.managedFields?.length, "the server's Lease has managed fields");
    assert.ok(node!.metadata?.managedFields?.length, "the server's Node has managed fields");
    assert.equal(running.lease.lease?.metadata?.managedFields, undefined);
    assert.equal(running.node.node?.metadata?.managedFields, undefined);
  } finally {
    await running.stop();
    await deleteNode(cluster, name);
  }
});

Deno.test("conditions, labels and annotations of other writers survive status updates", async () => {
  const cluster = await useCluster();
  const name = uniqueNodeName("vk-merge");
  const provider = new FakeNodeProvider();
  const running = await start(cluster, name, { provider });
  try {
    await running.node.ready;
    const patched = await cluster.kubectl([
      "patch",
      "node",
      name,
      "--subresource=status",
      "--type=strategic",
      "-p",
      JSON.stringify({
        status: {
          conditions: [{ type: "ExampleCondition", status: "True", reason: "Test", message: "x" }],
          capacity: { "example.com/dongle": "4" },
        },
      }),
    ]);
    assert.equal(patched.code, 0, patched.stderr);
    assert.equal((await cluster.kubectl(["label", "node", name, "team=blue"])).code, 0);
    assert.equal(
      (await cluster.kubectl(["annotate", "node", name, "example.com/note=hi"])).code,
      0,
    );

    provider.capacity = { cpu: "16", memory: "64Gi", pods: "150" };
    provider.labels = { "vkubelet.io/pool": "a" };
    provider.changed();
    const after = await waitFor("the provider's change", 5_000, async () => {
      const node = await getNode(cluster, name);
      return node?.status?.capacity?.cpu === "16" ? node : undefined;
    });
    const types = after!.status!.conditions!.map((c) => c.type);
    assert.ok(types.includes("ExampleCondition"), `conditions: ${types.join(", ")}`);
    assert.equal(after!.status!.capacity!["example.com/dongle"], "4");
    assert.equal(after!.metadata!.labels!.team, "blue");
    assert.equal(after!.metadata!.labels!["vkubelet.io/pool"], "a");
    assert.equal(after!.metadata!.annotations!["example.com/note"], "hi");
    assert.equal(ready(after), "True");
    assert.deepEqual(after!.status!.addresses, [
      { type: "InternalIP", address: "127.0.0.1" },
      { type: "Hostname", address: name },
    ]);
  } finally {
    await running.stop();
    await deleteNode(cluster, name);
  }
});

Deno.test("a stopped vkubelet goes Unknown; started again it is Ready with the same uid", async () => {
  const cluster = await useCluster();
  const name = uniqueNodeName("vk-restart");
  let running = await start(cluster, name, { node: { cordonOnShutdown: true } });
  try {
    await running.node.ready;
    const uid = running.node.uid();
    await running.stop();
    const cordoned = await getNode(cluster, name);
    assert.equal(cordoned?.spec?.unschedulable, true, "not cordoned on shutdown");
    // node-monitor-grace-period is 20 s in the test cluster; the monitor runs every 5 s.
    await waitFor(
      "Ready=Unknown",
      45_000,
      async () => ready(await getNode(cluster, name)) === "Unknown",
    );

    running = await start(cluster, name);
    const node = await waitFor("Ready=True again", 10_000, async () => {
      const node = await getNode(cluster, name);
      return ready(node) === "True" ? node : undefined;
    });
    assert.equal(node!.metadata?.uid, uid);
    assert.equal(node!.spec?.unschedulable, undefined, "our shutdown cordon was not undone");
  } finally {
    await running.stop();
    await deleteNode(cluster, name);
  }
});

Deno.test("a node deleted by someone is registered again", async () => {
  const cluster = await useCluster();
  const name = uniqueNodeName("vk-delete");
  const running = await start(cluster, name, { node: { statusUpdateIntervalMs: 1_000 } });
  try {
    await running.node.ready;
    const uid = running.node.uid();
    const deleted = await cluster.kubectl(["delete", "node", name, "--wait=true"]);
    assert.equal(deleted.code, 0, deleted.stderr);
    const node = await waitFor("the node to come back", 10_000, async () => {
      const node = await getNode(cluster, name);
      return node && node.metadata?.uid !== uid ? node : undefined;
    });
    assert.equal(ready(node), "True");
    assert.ok(running.records.some((r) => r.level === "warning" && /deleted/.test(r.message)));
    // The lease follows the new uid at its next renewal.
    await waitFor("the lease to point at the new node", 15_000, async () => {
      const lease = await getLease(cluster, name);
      return lease?.metadata?.ownerReferences?.[0]?.uid === node!.metadata?.uid;
    });
  } finally {
    await running.stop();
    await deleteNode(cluster, name);
  }
});

Deno.test("while the ping fails the lease stands still and Ready says why, past the grace period", async () => {
  const cluster = await useCluster();
  const name = uniqueNodeName("vk-ping");
  const provider = new FakeNodeProvider();
  const running = await start(cluster, name, { provider, pingIntervalMs: 2_000 });
  try {
    await running.node.ready;
    await waitFor("the lease", 5_000, () => getLease(cluster, name));
    provider.pingError = new Error("backend unreachable");
    const notReady = await waitFor("Ready=False", 5_000, async () => {
      const node = await getNode(cluster, name);
      return ready(node) === "False" ? node : undefined;
    });
    const reason = (node: Node | undefined) =>
      node?.status?.conditions?.find((c) => c.type === "Ready")?.reason;
    assert.equal(reason(notReady), "ProviderPingFailed");
    const frozen = (await getLease(cluster, name))!.spec!.renewTime;
    // Longer than the cluster's 20 s node-monitor-grace-period: our reason is kept, not Unknown.
    await new Promise((r) => setTimeout(r, 25_000));
    const still = await getNode(cluster, name);
    assert.equal(ready(still), "False");
    assert.equal(reason(still), "ProviderPingFailed");
    assert.match(
      still!.status!.conditions!.find((c) => c.type === "Ready")!.message!,
      /backend unreachable/,
    );
    assert.equal((await getLease(cluster, name))!.spec!.renewTime, frozen);

    provider.pingError = undefined;
    await waitFor("Ready=True", 5_000, async () => ready(await getNode(cluster, name)) === "True");
    await waitFor("a lease renewal", 5_000, async () => {
      return (await getLease(cluster, name))?.spec?.renewTime !== frozen;
    });
  } finally {
    await running.stop();
    await deleteNode(cluster, name);
  }
});
