/**
 * Issue 24, item 5: scheduling aimed at B. The virtual node carries the labels every selected
 * node of B shares, so A's scheduler can match on them; a pod asking for a label only one node
 * of B has (annotation `vkubelet.io/downstream-node-selector`) runs on that node.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type TwoClusters, twoClusters } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

function deployment(env: TwoClusters, name: string, replicas: number, spec: {
  annotations?: Record<string, string>;
  nodeSelector?: Record<string, string>;
}) {
  return JSON.stringify({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: env.namespaceA },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations: spec.annotations },
        spec: {
          ...env.placement,
          nodeSelector: { ...env.placement.nodeSelector, ...spec.nodeSelector },
          terminationGracePeriodSeconds: 0,
          containers: [{ name: "main", image: "busybox", command: ["sleep", "3600"] }],
        },
      },
    },
  });
}

async function runningInB(env: TwoClusters, app: string, n: number): Promise<Pod[]> {
  return await eventually(`${n} Running pods of ${app} in B`, async () => {
    const list = await env.adminB.pods.list({
      namespace: env.namespaceB,
      labelSelector: `app=${app}`,
    });
    const running = list.items.filter((p) => p.status?.phase === "Running");
    return running.length === n && running;
  }, 90_000);
}

Deno.test("kubernetes provider: shared labels on the virtual node, a B-only label reaches its node", async (t) => {
  const zone = { "example.com/zone": "z1" };
  const env = await twoClusters({
    nodesB: [{ labels: { ...zone, "example.com/gpu": "a100" } }, { labels: zone }],
  });
  const [gpuNode] = env.nodesB;
  const kubectlA = env.a.kubectlIn(env.namespaceA);
  try {
    await t.step(
      "the virtual node has the labels both nodes of B share, and no other",
      async () => {
        const node = await eventually("the shared label on the virtual node", async () => {
          const out = await env.a.kubectl(["get", "node", env.virtualNode.nodeName, "-o", "json"]);
          const node = JSON.parse(out.stdout);
          return node.metadata.labels["example.com/zone"] === "z1" && node;
        }, 30_000);
        assert.equal(node.metadata.labels["example.com/gpu"], undefined);
        assert.equal(node.metadata.labels["kubernetes.io/hostname"], env.virtualNode.nodeName);
      },
    );

    await t.step("a pod of A selecting a shared label is placed on the virtual node", async () => {
      await kubectlA(["apply", "-f", "-"], deployment(env, "zoned", 1, { nodeSelector: zone }));
      await runningInB(env, "zoned", 1);
    });

    await t.step("pods asking for a B-only label run on that node of B", async () => {
      await kubectlA(
        ["apply", "-f", "-"],
        deployment(env, "gpu", 4, {
          annotations: { "vkubelet.io/downstream-node-selector": '{"example.com/gpu":"a100"}' },
        }),
      );
      const pods = await runningInB(env, "gpu", 4);
      assert.deepEqual(pods.map((p) => p.spec?.nodeName), Array(4).fill(gpuNode.nodeName));
    });

    await t.step("a malformed annotation fails the pod, naming the annotation", async () => {
      await kubectlA(
        ["apply", "-f", "-"],
        deployment(env, "bad", 1, {
          annotations: { "vkubelet.io/downstream-affinity": "[1]" },
        }),
      );
      await eventually("the pod Failed with the annotation in its message", async () => {
        const list = await env.adminA.pods.list({
          namespace: env.namespaceA,
          labelSelector: "app=bad",
        });
        return list.items.some((p) =>
          p.status?.phase === "Failed" &&
          p.status.message?.includes("annotation vkubelet.io/downstream-affinity")
        );
      }, 60_000);
      await kubectlA(["delete", "deployment", "bad"]);
    });
  } finally {
    await env.a.kubectl(["delete", "namespace", env.namespaceA, "--wait=false"]);
    await env.close();
  }
});
