/**
 * The pod controller against the real control plane, with the mock provider: one DELETE per
 * removed pod, readiness gates, and the conditions of a pod held by a config or provider error.
 * @module
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { deployment, log, podsIn, registerNode, runningCount, waitFor } from "./_cluster_node.ts";

const deletes = (requests: Map<string, number>) =>
  Object.fromEntries([...requests].filter(([k]) => k.startsWith("DELETE ")));

Deno.test({
  name: "pods: a Deployment of 30 scaled to 0 costs one DELETE per pod, none answered 404",
  sanitizeResources: false, // the node client's pooled HTTP connections are closed in close()
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    const stop = await node.startController();
    try {
      const kubectl = cluster.kubectlIn(ns);
      await kubectl(["apply", "-f", "-"], JSON.stringify(deployment("web", node.name, 30)));
      await waitFor(
        "30 Running pods",
        90_000,
        async () => runningCount(await podsIn(cluster, ns)) === 30 ? true : undefined,
      );
      await kubectl(["scale", "deployment/web", "--replicas=0"]);
      await waitFor(
        "no pods left",
        60_000,
        async () => (await podsIn(cluster, ns)).length === 0 ? true : undefined,
      );
      // Late syncs (a resync runs every 10 s here) would send their DELETE after the last pod went.
      await new Promise((r) => setTimeout(r, 12_000));
      log.info("DELETEs by code: {deletes}", { deletes: deletes(node.requests) });
      assert.deepEqual(deletes(node.requests), { "DELETE 200": 30 });
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});

const GATE = "example.com/gate";

const readyOf = (pod: Pod | undefined) => pod?.status?.conditions?.find((c) => c.type === "Ready");

Deno.test({
  name: "pods: a readiness gate keeps Ready False until its condition is True, and is followed",
  sanitizeResources: false,
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    const stop = await node.startController();
    try {
      const kubectl = cluster.kubectlIn(ns);
      const pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "gated" },
        spec: {
          nodeName: node.name,
          readinessGates: [{ conditionType: GATE }],
          containers: [{ name: "main", image: "nginx" }],
        },
      };
      await kubectl(["create", "-f", "-"], JSON.stringify(pod));
      const get = async () => (await podsIn(cluster, ns)).find((p) => p.metadata?.name === "gated");
      const held = await waitFor(
        "the pod Running and held unready by its gate",
        30_000,
        async () => {
          const p = await get();
          return p?.status?.phase === "Running" && readyOf(p)?.reason === "ReadinessGatesNotReady"
            ? p
            : undefined;
        },
      );
      assert.equal(readyOf(held)?.status, "False");
      assert.equal(
        readyOf(held)?.message,
        `corresponding condition of pod readiness gate "${GATE}" does not exist.`,
      );
      const patchGate = (status: string) =>
        kubectl([
          "patch",
          "pod",
          "gated",
          "--subresource=status",
          "-p",
          JSON.stringify({ status: { conditions: [{ type: GATE, status }] } }),
        ]);
      await patchGate("True");
      await waitFor(
        "Ready=True once the gate is True",
        15_000,
        async () => readyOf(await get())?.status === "True" ? true : undefined,
      );
      await patchGate("False");
      const unready = await waitFor("Ready=False once the gate is False", 15_000, async () => {
        const p = await get();
        return readyOf(p)?.status === "False" ? p : undefined;
      });
      assert.equal(readyOf(unready)?.reason, "ReadinessGatesNotReady");
      assert.equal(
        readyOf(unready)?.message,
        `the status of pod readiness gate "${GATE}" is not "True", but False`,
      );
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});

const conditionSummary = (pod: Pod | undefined) =>
  pod?.status?.conditions?.map((c) => `${c.type}=${c.status}${c.reason ? ` ${c.reason}` : ""}`);

Deno.test({
  name:
    "pods: pods held by CreateContainerConfigError or ProviderFailed carry the kubelet's five conditions",
  sanitizeResources: false,
  async fn() {
    const cluster = await useCluster();
    const ns = await cluster.newNamespace("pods");
    const node = await registerNode(cluster);
    const stop = await node.startController();
    try {
      const kubectl = cluster.kubectlIn(ns);
      const pod = (name: string, extra: object, container: object = {}) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, ...extra },
        spec: {
          nodeName: node.name,
          containers: [{ name: "main", image: "nginx", ...container }],
        },
      });
      await kubectl(
        ["create", "-f", "-"],
        JSON.stringify(pod("needs-cfg", {}, {
          env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "absent", key: "a" } } }],
        })),
      );
      await kubectl(
        ["create", "-f", "-"],
        JSON.stringify(
          pod("refused", { annotations: { "mock.vkubelet.io/create-error": "transient" } }),
        ),
      );
      const held = await waitFor("both pods held with their reasons", 30_000, async () => {
        const pods = await podsIn(cluster, ns);
        const cfg = pods.find((p) => p.metadata?.name === "needs-cfg");
        const refused = pods.find((p) => p.metadata?.name === "refused");
        const waiting = cfg?.status?.containerStatuses?.[0].state?.waiting?.reason;
        return waiting === "CreateContainerConfigError" &&
            refused?.status?.reason === "ProviderFailed" && cfg?.status?.conditions?.length &&
            refused.status.conditions?.length
          ? { cfg, refused }
          : undefined;
      });
      // The kubelet's order (pkg/kubelet/kubelet_pods.go generateAPIPodStatus).
      assert.deepEqual(conditionSummary(held.cfg), [
        "PodReadyToStartContainers=True",
        "Initialized=True",
        "Ready=False ContainersNotReady",
        "ContainersReady=False ContainersNotReady",
        "PodScheduled=True",
      ]);
      assert.deepEqual(conditionSummary(held.refused), [
        "PodReadyToStartContainers=False PodSandboxNotReady",
        "Initialized=True",
        "Ready=False ContainersNotReady",
        "ContainersReady=False ContainersNotReady",
        "PodScheduled=True",
      ]);
      assert.equal(
        held.cfg.status?.conditions?.find((c) => c.type === "Ready")?.message,
        "containers with unready status: [main]",
      );
    } finally {
      await stop();
      await node.close();
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  },
});
