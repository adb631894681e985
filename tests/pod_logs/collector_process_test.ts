/**
 * The OpenTelemetry Collector (tools/otelcol, docs/logging.md's config) tails the pod log
 * directory of a vkubelet running the process provider against the local control plane: a
 * container's first instance and, after its restart, the second, through rotations (a 4 KiB
 * --container-log-max-size) and a vkubelet restart, each line once, in order, with the pod's
 * metadata and restart count.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { eventually } from "../../tools/harness/wait.ts";
import {
  assertAllLabelled,
  assertCounted,
  rotatedFiles,
  startLogAgent,
} from "./_collector_checks.ts";

const PAD = "x".repeat(100);

Deno.test({
  name:
    "collector: a process pod's lines arrive once, in order, labelled, through a restart, rotations and vkubelet's restart",
  ignore: Deno.uid() !== 0,
  async fn() {
    const cluster = await useCluster();
    const agent = await startLogAgent("collector-process");
    const nodeName = `vk-otel-proc-${crypto.randomUUID().slice(0, 6)}`;
    const ns = await cluster.newNamespace("otel-proc");
    const kubectl = cluster.kubectlIn(ns);
    const stateDir = `${agent.root}/state`;
    let vk: RunningVkubelet | undefined;
    try {
      vk = await startVkubelet(cluster, {
        nodeName,
        provider: "process",
        providerConfig: JSON.stringify({ stateDir, cgroups: "off" }),
        args: agent.flags("4Ki"),
      });
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "talker" },
          spec: {
            nodeSelector: { "kubernetes.io/hostname": nodeName },
            tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
            restartPolicy: "OnFailure",
            terminationGracePeriodSeconds: 1,
            containers: [{
              name: "main",
              image: "busybox",
              // The first instance writes 30 lines and fails; the second counts for ever.
              command: [
                "sh",
                "-c",
                `if [ -e run ]; then i=0; while :; do i=$((i+1)); echo "tick $i ${PAD}"; sleep 0.05; done; else touch run; i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo "first $i"; done; exit 1; fi`,
              ],
            }],
          },
        }),
      );
      const pod: Pod = JSON.parse(await kubectl(["get", "pod", "talker", "-o", "json"]));

      const first = await agent.waitFor(pod, "main", 0, (b) => b.length >= 30, "instance 0");
      assertCounted(first, "first", 30);
      const before = await agent.waitFor(
        pod,
        "main",
        1,
        (b) => b.length >= 100,
        "100 ticks of instance 1",
      );
      assertCounted(before, "tick", 100);
      // Past 4 KiB, a file is rotated once it has been current for 10 s, as the kubelet's is.
      await eventually(
        "1.log rotated",
        async () => (await rotatedFiles(agent, pod, "main", 1)).length > 0,
        30_000,
      );

      // vkubelet stops for 2 s while the container writes on, then starts again.
      await vk.stop();
      const away = vk;
      vk = undefined;
      await new Promise((r) => setTimeout(r, 2000));
      // `like` keeps the node, certificate and provider config; the flags are given again.
      vk = await startVkubelet(cluster, {
        nodeName,
        provider: "process",
        like: away,
        args: agent.flags("4Ki"),
      });
      const seen = (await agent.instance(pod, "main", 1)).length;
      const after = await agent.waitFor(
        pod,
        "main",
        1,
        (b) => b.length >= seen + 100,
        "100 more ticks after vkubelet's restart",
      );
      assertCounted(after, "tick", seen + 100);
      assert.deepEqual((await agent.instance(pod, "main", 0)).map((r) => r.body), first);
      await assertAllLabelled(agent, pod);

      await kubectl(["delete", "pod", "talker", "--wait=true", "--timeout=60s"]);
      const podDir = `${agent.podLogDir}/${ns}_talker_${pod.metadata!.uid}`;
      await eventually(
        "the pod's log directory removed",
        () => Deno.stat(podDir).then(() => false, () => true),
        20_000,
      );
    } finally {
      await cluster.kubectl(["delete", "namespace", ns, "--wait=true", "--timeout=60s"]);
      await vk?.stop();
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      await agent.close();
    }
  },
});
