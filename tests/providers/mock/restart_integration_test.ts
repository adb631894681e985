/**
 * The mock provider across a vkubelet restart, against the real control plane through `main.ts`:
 * pods keep their IPs (derived from their UIDs) and their containers' `startedAt`, as pods keep
 * them across a kubelet restart, and no second `Started` event is recorded.
 * @module
 */
import assert from "node:assert/strict";
import type { Event, Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";

Deno.test("mock restart: after SIGTERM and a restart, pods keep their IP and startedAt", async () => {
  const cluster = await useCluster();
  const nodeName = `vk-restart-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("mock-restart");
  const kubectl = cluster.kubectlIn(ns);
  const pod = (name: string) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      nodeSelector: { "kubernetes.io/hostname": nodeName },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
      containers: [{ name: "main", image: "busybox" }],
    },
  });
  const running = async (): Promise<Pod[]> => {
    const pods: Pod[] = JSON.parse(await kubectl(["get", "pods", "-o", "json"])).items;
    return pods.filter((p) => p.status?.phase === "Running" && p.status.podIP);
  };
  const seen = (pods: Pod[]) =>
    Object.fromEntries(pods.map((p) => [p.metadata!.name!, {
      podIP: p.status?.podIP,
      startTime: p.status?.startTime,
      startedAt: p.status?.containerStatuses?.[0].state?.running?.startedAt,
    }]));
  let vk = await startVkubelet(cluster, { nodeName });
  try {
    for (const name of ["a", "b", "c"]) {
      await kubectl(["create", "-f", "-"], JSON.stringify(pod(name)));
    }
    await eventually(
      "three pods Running",
      async () => (await running()).length === 3 ? true : undefined,
    );
    // With a, b, c handed out in order, a restart that hands out in order again would move b and c.
    await kubectl(["delete", "pod", "a", "--wait=true"]);
    const before = seen(await running());
    assert.equal(Object.keys(before).length, 2);
    // startedAt has whole seconds: a restart in the same second would hide a new start time.
    await new Promise((r) => setTimeout(r, 1_100));
    const { code } = await vk.stop("SIGTERM");
    assert.equal(code, 0, vk.output());
    vk = await startVkubelet(cluster, { nodeName, like: vk });
    // Let the restarted vkubelet hand the pods to the mock again and write their status.
    await eventually(
      "the pods handed to the mock again",
      () => Promise.resolve(vk.output().includes("pod controller ready") ? true : undefined),
    );
    await new Promise((r) => setTimeout(r, 5_000));
    const after = seen(await running());
    assert.deepEqual(after, before);
    const started: Event[] = JSON.parse(
      await kubectl(["get", "events", "--field-selector", "reason=Started", "-o", "json"]),
    ).items;
    for (const name of ["b", "c"]) {
      const count = started.filter((e) => e.involvedObject.name === name)
        .reduce((n, e) => n + (e.count ?? 1), 0);
      assert.equal(count, 1, `pod ${name} was started once`);
    }
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    const { code } = await vk.stop("SIGTERM");
    assert.equal(code, 0, vk.output());
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
  }
});
