/**
 * The OpenTelemetry Collector (tools/otelcol, docs/logging.md's config) tails the pod log
 * directory of a vkubelet running the slurm provider against a real SLURM and the local control
 * plane: the kit mirrors each job's output there (provider/log_mirror.ts). A container's first
 * instance and, after its restart (a resubmitted job), the second, through rotations (a 4 KiB
 * --container-log-max-size) and a vkubelet restart, each line once, in order, with the pod's
 * metadata and restart count.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { eventually } from "../../tools/harness/wait.ts";
import { NOBODY, startSlurm } from "../../tools/harness/slurm.ts";
import {
  assertAllLabelled,
  assertCounted,
  rotatedFiles,
  startLogAgent,
} from "./_collector_checks.ts";

const PAD = "x".repeat(100);

Deno.test({
  name:
    "collector: a slurm pod's lines arrive once, in order, labelled, through a restart, rotations and vkubelet's restart",
  ignore: Deno.uid() !== 0,
  async fn() {
    const cluster = await useCluster();
    const slurm = await startSlurm();
    const agent = await startLogAgent("collector-slurm");
    // The job (as nobody) marks its first run here, so that the second behaves otherwise.
    const marks = await Deno.makeTempDir({ prefix: "vk-collector-slurm-marks-" });
    await Deno.chmod(marks, 0o1777);
    const nodeName = `vk-otel-slurm-${crypto.randomUUID().slice(0, 6)}`;
    const ns = await cluster.newNamespace("otel-slurm");
    const kubectl = cluster.kubectlIn(ns);
    const start = (like?: RunningVkubelet) =>
      startVkubelet(cluster, {
        nodeName,
        provider: "slurm",
        providerConfig: like ? undefined : JSON.stringify({
          rest: { socket: slurm.socket },
          cli: {},
          sharedDir: slurm.sharedDir,
          stateDir: `${slurm.dir}/vk-state`,
          fileOwner: NOBODY,
          statusInterval: "500ms",
          restartBackOff: { initial: "1s", max: "10s" },
        }),
        like,
        env: slurm.env,
        args: agent.flags("4Ki"),
      });
    let vk: RunningVkubelet | undefined;
    try {
      vk = await start();
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
              env: [{ name: "MARK", value: `${marks}/talker` }],
              // The first run writes 30 lines and fails; the second counts for ever.
              command: [
                "sh",
                "-c",
                `if [ -e "$MARK" ]; then i=0; while :; do i=$((i+1)); echo "tick $i ${PAD}"; sleep 0.05; done; else touch "$MARK"; i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo "first $i"; done; exit 1; fi`,
              ],
            }],
          },
        }),
      );
      const pod: Pod = JSON.parse(await kubectl(["get", "pod", "talker", "-o", "json"]));

      const first = await agent.waitFor(pod, "main", 0, (b) => b.length >= 30, "run 0", 90_000);
      assertCounted(first, "first", 30);
      const before = await agent.waitFor(
        pod,
        "main",
        1,
        (b) => b.length >= 100,
        "100 ticks of run 1",
        90_000,
      );
      assertCounted(before, "tick", 100);
      // Past 4 KiB, a file is rotated once it has been current for 10 s, as the kubelet's is.
      await eventually(
        "1.log rotated",
        async () => (await rotatedFiles(agent, pod, "main", 1)).length > 0,
        30_000,
      );

      // vkubelet stops for 2 s while the job writes on, then starts again (and resumes).
      await vk.stop();
      const away = vk;
      vk = undefined;
      await new Promise((r) => setTimeout(r, 2000));
      vk = await start(away);
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
    } catch (err) {
      const status = await kubectl(["get", "pod", "talker", "-o", "jsonpath={.status}"]);
      console.error(`pod status: ${status}\nvkubelet said: ${vk?.output().slice(-3000)}`);
      throw err;
    } finally {
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      await vk?.stop();
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      await agent.close();
      await slurm.stop();
      await Deno.remove(marks, { recursive: true }).catch(() => {});
    }
  },
});
