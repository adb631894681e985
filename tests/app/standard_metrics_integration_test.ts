/**
 * The kubelet-standard metric families during a real rollout on the local control plane: a
 * Deployment of 80 pods whose containers read a ConfigMap that is created only after the pods
 * are bound (they wait in CreateContainerConfigError and are retried, as the kubelet retries
 * them), with the client held to 10 requests a second so that status writes queue up. `/metrics`
 * is scraped before the rollout, polled during it, and scraped after; each family moves.
 */
import assert from "node:assert/strict";
import { useCluster } from "../../tools/cluster/harness.ts";
import { freePort } from "../../tools/cluster/ports.ts";
import { startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { eventually } from "../../tools/harness/wait.ts";

const REPLICAS = 80;

/** Sums every sample of `name` whose labels contain each of `labels` (`key="value"`). */
function total(text: string, name: string, ...labels: string[]): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    if (labels.every((l) => (match[2] ?? "").includes(l))) sum += Number(match[3]);
  }
  return sum;
}

function deployment(ns: string, node: string) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: ns },
    spec: {
      replicas: REPLICAS,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": node },
          tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
          containers: [{
            name: "app",
            image: "nginx:1",
            env: [{
              name: "GREETING",
              valueFrom: { configMapKeyRef: { name: "web-config", key: "greeting" } },
            }],
          }],
        },
      },
    },
  };
}

Deno.test({
  name: "a rollout moves every kubelet and client-go metric family on /metrics",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("metrics");
    const kubectl = cluster.kubectlIn(ns);
    const node = `vk-metrics-${crypto.randomUUID().slice(0, 6)}`;
    const metricsPort = freePort();
    const vk = await startVkubelet(cluster, {
      nodeName: node,
      args: [`--metrics-addr=127.0.0.1:${metricsPort}`, "--kube-api-qps=10", "--kube-api-burst=10"],
    });
    const scrape = async () => {
      const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      return await response.text();
    };
    try {
      const before = await scrape();
      await kubectl(["apply", "-f", "-"], JSON.stringify(deployment(ns, node)));
      // Depth is a gauge: watch it while the status writes wait for the client's limit.
      let deepest = 0;
      let polling = true;
      const poll = (async () => {
        while (polling) {
          deepest = Math.max(deepest, total(await scrape(), "workqueue_depth"));
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      await eventually(
        "a pod retried for its missing ConfigMap",
        async () =>
          total(await scrape(), "workqueue_retries_total", 'name="syncPodsFromKubernetes"') > 0 ||
          undefined,
        120_000,
      );
      await kubectl(["create", "configmap", "web-config", "--from-literal=greeting=hello"]);
      await eventually(`${REPLICAS} pods Running`, async () => {
        const running = total(await scrape(), "kubelet_running_pods");
        return running === REPLICAS || undefined;
      }, 180_000);
      polling = false;
      await poll;
      const after = await scrape();
      const moved = (name: string, ...labels: string[]) => {
        const [a, b] = [total(before, name, ...labels), total(after, name, ...labels)];
        console.log(`${name}${labels.length ? `{${labels}}` : ""}: ${a} -> ${b}`);
        return b > a;
      };
      const host = `host="${new URL(cluster.server).host}"`;
      assert.ok(moved("rest_client_requests_total", 'code="200"', 'method="PUT"', host));
      assert.ok(moved("rest_client_requests_total", 'code="201"', 'method="POST"', host));
      assert.ok(moved("rest_client_request_duration_seconds_count", 'verb="PUT"', host));
      for (const queue of ['name="syncPodsFromKubernetes"', 'name="syncPodStatusFromProvider"']) {
        assert.ok(moved("workqueue_adds_total", queue));
        assert.ok(moved("workqueue_queue_duration_seconds_count", queue));
        assert.ok(moved("workqueue_work_duration_seconds_count", queue));
      }
      assert.ok(moved("workqueue_retries_total", 'name="syncPodsFromKubernetes"'));
      console.log(
        `workqueue_depth: 0 -> ${deepest} during the rollout -> ${total(after, "workqueue_depth")}`,
      );
      assert.equal(total(before, "workqueue_depth"), 0);
      assert.ok(deepest > 0, "keys waited in a queue while the client was held to its limit");
      assert.ok(moved("kubelet_running_pods"));
      assert.equal(total(after, "kubelet_running_pods"), REPLICAS);
      assert.ok(moved("kubelet_running_containers", 'container_state="running"'));
      assert.ok(moved("kubelet_pod_start_duration_seconds_count"));
      assert.equal(total(after, "kubelet_pod_start_duration_seconds_count"), REPLICAS);
      // The node's name is a constant 1: there from the start, and still there.
      assert.equal(total(before, "kubelet_node_name", `node="${node}"`), 1);
      assert.equal(total(after, "kubelet_node_name", `node="${node}"`), 1);
    } finally {
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      const { code } = await vk.stop("SIGTERM");
      await cluster.kubectl(["delete", "node", node, "--wait=false"]);
      assert.equal(code, 0, vk.output().slice(-3000));
    }
  },
});
