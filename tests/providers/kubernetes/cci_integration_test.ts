/**
 * Issue 20: the kubernetes provider towards a CCI stand-in (`_cci_setup.ts`) — the downstream
 * kubeconfig authenticates with an exec credential plugin (cached until its expiry, re-run on a
 * 401); a typical Deployment (odd CPU, no limits, an emptyDir, a time-zone hostPath) is refused
 * by B's CCI admission rules without the profile, and runs in B with `profile: cci`, with logs
 * and exec working from A.
 */
import assert from "node:assert/strict";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import { KubeClient } from "../../../k8s/mod.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { CCI_USER, type CciCluster, cciCluster, cciNode } from "./_cci_setup.ts";

async function whoAmI(client: KubeClient): Promise<string | undefined> {
  const review = await client.request<{ status?: { userInfo?: { username?: string } } }>({
    method: "POST",
    path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
  });
  return review.status?.userInfo?.username;
}

Deno.test("downstream kubeconfig with an exec credential plugin: cached until expiry, re-run on 401", async (t) => {
  const cci = await cciCluster();
  try {
    await t.step("one run serves many requests while the token is valid", async () => {
      const { path, runs } = await cci.pluginKubeconfig();
      const client = await KubeClient.fromConfig({ kubeconfig: path });
      try {
        assert.equal(await whoAmI(client), CCI_USER);
        for (let i = 0; i < 5; i++) await client.pods.list({ namespace: cci.namespace });
        assert.equal(runs(), 1);
      } finally {
        client.close();
      }
    });
    await t.step("an expired token makes the plugin run again", async () => {
      const { path, runs } = await cci.pluginKubeconfig({ CCI_TOKEN_TTL: "2" });
      const client = await KubeClient.fromConfig({ kubeconfig: path });
      try {
        await client.pods.list({ namespace: cci.namespace });
        assert.equal(runs(), 1);
        await new Promise((r) => setTimeout(r, 2100));
        await client.pods.list({ namespace: cci.namespace });
        assert.equal(runs(), 2);
      } finally {
        client.close();
      }
    });
    await t.step("a token the apiserver refuses (401) makes the plugin run again", async () => {
      const { path, runs } = await cci.pluginKubeconfig({ CCI_PLUGIN_FIRST_REVOKED: "1" });
      const client = await KubeClient.fromConfig({ kubeconfig: path });
      try {
        assert.equal(await whoAmI(client), CCI_USER);
        assert.equal(runs(), 2);
      } finally {
        client.close();
      }
    });
  } finally {
    await cci.close();
  }
});

const TICKER = 'echo "started"; i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done';

/** A typical Deployment: odd CPU, no limits, an emptyDir and a time-zone hostPath. */
function deployment(namespace: string, nodeName: string) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": nodeName },
          tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
          terminationGracePeriodSeconds: 2,
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sh", "-c", TICKER],
            resources: { requests: { cpu: "300m", memory: "100Mi" } },
            volumeMounts: [
              { name: "scratch", mountPath: "/scratch" },
              { name: "tz", mountPath: "/etc/localtime", readOnly: true },
            ],
          }],
          volumes: [
            { name: "scratch", emptyDir: {} },
            { name: "tz", hostPath: { path: "/etc/localtime" } },
          ],
        },
      },
    },
  };
}

async function virtualNode(
  cci: CciCluster,
  name: string,
  nodeB: RunningVkubelet,
  profile: string | undefined,
): Promise<{ node: RunningVkubelet; runs: () => number }> {
  const a = await useCluster();
  const { path, runs } = await cci.pluginKubeconfig();
  const node = await startVkubelet(a, {
    nodeName: name,
    provider: "kubernetes",
    providerConfig: JSON.stringify({
      kubeconfig: path,
      namespace: cci.namespace,
      nodeSelector: { "kubernetes.io/hostname": nodeB.nodeName },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
      ...(profile ? { profile } : {}),
    }),
  });
  return { node, runs };
}

Deno.test("profile cci: a Deployment B's CCI rules refuse runs once the profile shapes it", async (t) => {
  const a = await useCluster();
  const cci = await cciCluster();
  const suffix = crypto.randomUUID().slice(0, 6);
  const nodeB = await cciNode(cci, `cci-b-${suffix}`);
  const admin = await KubeClient.fromConfig({ kubeconfig: a.kubeconfigPath });
  const started: RunningVkubelet[] = [];
  const namespaces: string[] = [];
  try {
    await t.step(
      "without the profile B refuses the pod and the upstream pod says why",
      async () => {
        const { node } = await virtualNode(cci, `vk-plain-${suffix}`, nodeB, undefined);
        started.push(node);
        const ns = await a.newNamespace("cci-plain");
        namespaces.push(ns);
        await a.kubectlIn(ns)(["apply", "-f", "-"], JSON.stringify(deployment(ns, node.nodeName)));
        const failed = await eventually("an upstream pod failed by the provider", async () => {
          const pods = (await admin.pods.list({ namespace: ns, labelSelector: "app=web" })).items;
          return pods.find((p) => p.status?.reason === "ProviderFailed");
        }, 90_000);
        assert.equal(failed.status?.phase, "Failed");
        assert.match(failed.status?.message ?? "", /denied request: CCI: /);
        await a.kubectlIn(ns)(["delete", "deployment", "web"]);
        await node.stop();
      },
    );

    await t.step("with profile cci the same Deployment runs in B and is Running in A", async () => {
      const { node, runs } = await virtualNode(cci, `vk-cci-${suffix}`, nodeB, "cci");
      started.push(node);
      const ns = await a.newNamespace("cci-prof");
      namespaces.push(ns);
      const kubectl = a.kubectlIn(ns);
      await kubectl(["apply", "-f", "-"], JSON.stringify(deployment(ns, node.nodeName)));
      await kubectl(["rollout", "status", "deployment/web", "--timeout=120s"]);
      const up = (await admin.pods.list({ namespace: ns, labelSelector: "app=web" })).items
        .find((p) => p.status?.phase === "Running") as Pod;
      assert.ok(up, "no Running pod in A");
      const name = up.metadata!.name!;
      const down = await eventually("the pod in B", async () => {
        const list = await cci.cluster.kubectlIn(cci.namespace)(["get", "pods", "-o", "json"]);
        return (JSON.parse(list).items as Pod[]).find((p) =>
          p.metadata?.labels?.["vkubelet.io/upstream-uid"] === up.metadata?.uid
        );
      });
      assert.equal(down.status?.phase, "Running");
      const sized = { cpu: "500m", memory: "1Gi" };
      assert.deepEqual(down.spec?.containers[0].resources, { limits: sized, requests: sized });
      assert.ok(down.spec?.volumes?.some((v) => v.name === "scratch" && v.emptyDir));
      assert.ok(!down.spec?.volumes?.some((v) => v.hostPath), "a hostPath reached B");

      const events = await eventually("the ShapedForCci event", async () => {
        const list = await admin.events.list({
          namespace: ns,
          fieldSelector: `involvedObject.name=${name}`,
        });
        return list.items.find((e: Event) => e.reason === "ShapedForCci");
      });
      assert.match(events.message ?? "", /pod sized 0\.5 vCPU \/ 1 GiB/);
      assert.match(events.message ?? "", /dropped hostPath volume tz/);

      const logs = await eventually("the container's log", async () => {
        const text = await kubectl(["logs", name, "--tail=50"]);
        return text.includes("started") && text;
      });
      assert.match(logs, /tick \d+/);
      assert.equal(
        (await kubectl(["exec", name, "--", "sh", "-c", "echo hi >/scratch/f; cat /scratch/f"]))
          .trim(),
        "hi",
      );
      // Every call to B, the informers' watches included, went on one or two plugin runs.
      assert.ok(runs() >= 1 && runs() <= 2, `the plugin ran ${runs()} times`);
      await kubectl(["delete", "deployment", "web"]);
    });
  } finally {
    for (const node of started) await node.stop();
    await nodeB.stop();
    admin.close();
    for (const ns of namespaces) await a.kubectl(["delete", "namespace", ns, "--wait=false"]);
    for (const node of started) {
      await a.kubectl(["delete", "node", node.nodeName, "--wait=false"]);
    }
    await cci.cluster.kubectl(["delete", "node", nodeB.nodeName, "--wait=false"]);
    await cci.close();
  }
});
