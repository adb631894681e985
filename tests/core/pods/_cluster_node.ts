/**
 * A test node on the real control plane for the pod controller's integration tests: a minimal
 * Ready Node, its node-identity client (counting requests by verb and code), a mock provider and
 * a heartbeat; plus small kubectl helpers.
 * @module
 */
import assert from "node:assert/strict";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../../k8s/client.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import { PodController } from "../../../core/pods/mod.ts";
import type { MockProvider } from "../../../providers/mock/mod.ts";
import { createProvider } from "../../../providers/mock/mod.ts";
import type { TestCluster } from "../../../tools/cluster/harness.ts";
import { eventually } from "../../../tools/harness/wait.ts";

export const log = getLogger(["vkubelet", "test", "pods"]);
/** The test node's address. */
export const NODE_IP = "127.0.0.1";

/** A registered test node, its client, its mock provider. */
export interface TestNode {
  name: string;
  client: KubeClient;
  provider: MockProvider;
  /** Requests the node's client made, by `VERB code` (e.g. `DELETE 404`), retries included. */
  requests: Map<string, number>;
  /** Starts a controller; the returned function stops it and waits. */
  startController(): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** A Ready node with no taints, its node-identity client, a mock provider and a heartbeat. */
export async function registerNode(cluster: TestCluster): Promise<TestNode> {
  const name = `vk-pods-${crypto.randomUUID().slice(0, 8)}`;
  const now = new Date().toISOString().slice(0, 19) + "Z";
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { "kubernetes.io/hostname": name, type: "virtual-kubelet" } },
    status: {
      capacity: { cpu: "20", memory: "100Gi", pods: "110" },
      allocatable: { cpu: "20", memory: "100Gi", pods: "110" },
      conditions: [{
        type: "Ready",
        status: "True",
        reason: "KubeletReady",
        message: "test node",
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      }],
      addresses: [{ type: "InternalIP", address: NODE_IP }],
    },
  };
  const created = await cluster.kubectl(["create", "-f", "-"], { stdin: JSON.stringify(node) });
  assert.equal(created.code, 0, created.stderr);
  const requests = new Map<string, number>();
  const client = await KubeClient.fromConfig({
    kubeconfig: await cluster.nodeKubeconfig(name),
    env: {},
    onResponse: ({ verb, code }) =>
      requests.set(`${verb} ${code}`, (requests.get(`${verb} ${code}`) ?? 0) + 1),
  });
  const life = new AbortController();
  const provider = createProvider(undefined, {
    nodeName: name,
    log,
    clock: realClock,
    internalIp: NODE_IP,
    daemonPort: 10250,
    signal: life.signal,
  });
  // The node lifecycle controller marks a node without heartbeats NotReady after 40 s.
  const heartbeat = (async () => {
    while (!life.signal.aborted) {
      await realClock.sleep(10_000, life.signal).catch(() => {});
      if (life.signal.aborted) break;
      const at = new Date().toISOString().slice(0, 19) + "Z";
      await client.nodes.patchStatus(name, {
        type: "strategic",
        body: {
          status: { conditions: [{ type: "Ready", status: "True", lastHeartbeatTime: at }] },
        },
        signal: life.signal,
      }).catch(() => {});
    }
  })();
  return {
    name,
    client,
    provider,
    requests,
    async startController() {
      const controller = new PodController({
        api: client,
        provider,
        clock: realClock,
        log,
        nodeName: name,
        workers: 10,
        resyncPeriodMs: 10_000,
        nodeIps: () => [NODE_IP],
        allocatable: () => node.status.allocatable,
      });
      const abort = new AbortController();
      const running = controller.run(abort.signal);
      await controller.ready;
      return async () => {
        abort.abort();
        await running;
      };
    },
    async close() {
      life.abort();
      await heartbeat;
      await cluster.kubectl(["delete", "node", name, "--wait=false"]);
      client.close();
    },
  };
}

/** The pods of a namespace, as the admin sees them. */
export async function podsIn(cluster: TestCluster, ns: string): Promise<Pod[]> {
  const out = await cluster.kubectl(["-n", ns, "get", "pods", "-o", "json"]);
  assert.equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout).items;
}

/** The events of a namespace (empty when kubectl fails). */
export async function eventsIn(cluster: TestCluster, ns: string): Promise<Event[]> {
  const out = await cluster.kubectl(["-n", ns, "get", "events", "-o", "json"]);
  return out.code === 0 ? JSON.parse(out.stdout).items : [];
}

/** Polls `check` until it returns a value other than `undefined`, or fails after `ms`. */
export function waitFor<T>(
  what: string,
  ms: number,
  check: () => Promise<T | undefined>,
): Promise<T> {
  return eventually(what, check, ms, 200);
}

/** A Deployment of nginx pods pinned to `node`, grace period 30 s. */
export function deployment(name: string, node: string, replicas: number) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": node },
          terminationGracePeriodSeconds: 30,
          containers: [{ name: "main", image: "nginx" }],
        },
      },
    },
  };
}

/** Pods Running and not deleting. */
export const runningCount = (pods: Pod[]) =>
  pods.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp).length;
