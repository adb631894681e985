/**
 * Issue 24, item 4: no pod stuck Pending in B. A pod that fits the virtual node's capacity (a
 * sum over B's nodes) but no single node of B is refused with the reason and its Deployment
 * places a replacement; a pod B's scheduler cannot place for a reason vkubelet does not check
 * (a host port taken on every node) is failed after `unschedulableTimeout`, and B's
 * FailedScheduling event shows on the upstream pod in A.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type TwoClusters, twoClusters } from "./_setup.ts";
import { eventually } from "../../../tools/harness/wait.ts";

function deployment(env: TwoClusters, name: string, container: Record<string, unknown>) {
  return JSON.stringify({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: env.namespaceA },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          ...env.placement,
          terminationGracePeriodSeconds: 0,
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sleep", "3600"],
            ...container,
          }],
        },
      },
    },
  });
}

async function podsOf(env: TwoClusters, app: string): Promise<Pod[]> {
  const list = await env.adminA.pods.list({
    namespace: env.namespaceA,
    labelSelector: `app=${app}`,
  });
  return list.items;
}

Deno.test("kubernetes provider: a pod no single node of B can take is failed upstream and replaced", async (t) => {
  const env = await twoClusters({
    providerConfig: { unschedulableTimeout: "5s" },
    nodesB: [{ capacity: { cpu: "2", memory: "4Gi", pods: "20" } }, {
      capacity: { cpu: "2", memory: "4Gi", pods: "20" },
    }],
  });
  const kubectlA = env.a.kubectlIn(env.namespaceA);
  const port = 30_000 + Math.floor(Math.random() * 2_000);
  try {
    await t.step(
      "too large for each node of B: refused with the reason, then replaced",
      async () => {
        const started = Date.now();
        await kubectlA(
          ["apply", "-f", "-"],
          deployment(env, "big", {
            resources: { requests: { cpu: "3" } },
          }),
        );
        const failed = await eventually("a failed pod of the Deployment", async () => {
          const pods = await podsOf(env, "big");
          return pods.find((p) => p.status?.phase === "Failed");
        }, 60_000);
        assert.equal(
          failed.spec?.nodeName,
          env.virtualNode.nodeName,
          "A placed it on the virtual node",
        );
        assert.match(failed.status?.message ?? "", /0\/2 nodes .*2 Insufficient cpu/);
        assert.ok(Date.now() - started < 60_000);
        await eventually("a replacement pod", async () => {
          const pods = await podsOf(env, "big");
          return pods.some((p) => p.metadata?.uid !== failed.metadata?.uid);
        }, 60_000);
        const inB = await env.adminB.pods.list({
          namespace: env.namespaceB,
          labelSelector: "app=big",
        });
        assert.equal(inB.items.length, 0, "nothing Pending in B");
        await kubectlA(["delete", "deployment", "big"]);
      },
    );

    await t.step(
      "unschedulable in B past the timeout: failed with B's reason, event in A, replaced",
      async () => {
        // Every node of B has the host port taken by a pod of B's own (A cannot know).
        for (const node of env.nodesB) {
          await env.adminB.pods.create(env.namespaceB, {
            metadata: { name: `blocker-${node.nodeName}`, namespace: env.namespaceB },
            spec: {
              nodeName: node.nodeName,
              tolerations: [{ operator: "Exists" }],
              terminationGracePeriodSeconds: 0,
              containers: [{
                name: "main",
                image: "busybox",
                command: ["sleep", "3600"],
                ports: [{ containerPort: port, hostPort: port }],
              }],
            },
          });
        }
        await kubectlA(
          ["apply", "-f", "-"],
          deployment(env, "porty", {
            ports: [{ containerPort: port, hostPort: port }],
          }),
        );
        const pending = await eventually("the pod Pending unschedulable in B", async () => {
          const list = await env.adminB.pods.list({
            namespace: env.namespaceB,
            labelSelector: "app=porty",
          });
          return list.items.find((p) =>
            p.status?.conditions?.some((c) =>
              c.type === "PodScheduled" && c.reason === "Unschedulable"
            )
          );
        }, 60_000);
        const since = Date.now();
        const upName = pending.metadata!.annotations!["vkubelet.io/upstream-name"];
        const failed = await eventually("the upstream pod Failed", async () => {
          const pod = await env.adminA.pods.get(env.namespaceA, upName);
          return pod.status?.phase === "Failed" && pod;
        }, 60_000);
        const waited = Date.now() - since;
        assert.ok(waited < 30_000, `failed after ${waited} ms, configured 5 s`);
        assert.equal(failed.status?.reason, "DownstreamUnschedulable");
        assert.match(failed.status?.message ?? "", /free ports/);
        const event = await eventually("B's FailedScheduling event on the pod in A", async () => {
          const events = await env.adminA.events.list({
            namespace: env.namespaceA,
            fieldSelector: `involvedObject.uid=${failed.metadata?.uid}`,
          });
          return events.items.find((e) => e.reason === "FailedScheduling");
        }, 30_000);
        assert.equal(event.type, "Warning");
        assert.match(event.source?.component ?? "", /\(in B\)$/);
        await eventually("a replacement pod", async () => {
          const pods = await podsOf(env, "porty");
          return pods.some((p) => p.metadata?.uid !== failed.metadata?.uid);
        }, 60_000);
        await eventually("the failed pod's twin gone from B", async () => {
          const list = await env.adminB.pods.list({
            namespace: env.namespaceB,
            labelSelector: "app=porty",
          });
          return !list.items.some((p) => p.metadata?.uid === pending.metadata?.uid);
        }, 30_000);
        // One copy per event in B, however often B repeats it.
        const events = await env.adminA.events.list({
          namespace: env.namespaceA,
          fieldSelector: `involvedObject.uid=${failed.metadata?.uid}`,
        });
        const copies = events.items.filter((e) => e.reason === "FailedScheduling");
        const names = new Set(copies.map((e) => e.metadata?.name));
        assert.equal(names.size, copies.length);
      },
    );
  } finally {
    await env.a.kubectl(["delete", "namespace", env.namespaceA, "--wait=false"]);
    await env.b.kubectl([
      "-n",
      env.namespaceB,
      "delete",
      "pods",
      "--all",
      "--grace-period=0",
      "--force",
    ]);
    await env.close();
  }
});
