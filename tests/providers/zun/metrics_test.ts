/**
 * One-container pods on a zun node through the local control plane, `kubectl` and the real
 * metrics-server (tools/cluster/harness.ts `useMetricsServer`), against the real Zun stack:
 * `kubectl logs` and `kubectl exec` answer from the plain Zun container, `kubectl top pod` shows
 * it (CPU time from Zun's top, memory from Zun's stats), and a HorizontalPodAutoscaler scales a
 * Deployment up while its pods burn CPU and back down once they stop. The load is controlled
 * through exec: each replica starts a CPU-burning shell loop beside its main process, and the
 * test kills those loops with `kubectl exec … pkill` to end the load. (The loop is one long-lived
 * process: CPU time comes from Zun's top, which sees only the processes alive when it asks.)
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster, useMetricsServer } from "../../../tools/cluster/harness.ts";
import { startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { useZun, zunSkipReason } from "../../../tools/harness/zun.ts";

const skip = await zunSkipReason();

Deno.test({
  name: "zun node: kubectl logs, exec and top of a one-container pod; an HPA scales it up and down",
  ignore: skip !== undefined,
  async fn(t) {
    const zun = await useZun();
    const cluster = await useCluster();
    const metricsServer = await useMetricsServer();
    const nodeName = `vk-zun-top-${crypto.randomUUID().slice(0, 6)}`;
    const ns = await cluster.newNamespace("zun-top");
    const kubectl = cluster.kubectlIn(ns);
    const node = await startVkubelet(cluster, {
      nodeName,
      provider: "zun",
      providerConfig: JSON.stringify({ statusInterval: "1s" }),
      env: zun.env,
    });
    const pods = async (): Promise<Pod[]> =>
      (JSON.parse(await kubectl(["get", "pods", "-l", "app=burn", "-o", "json"])).items as Pod[])
        .filter((p) => !p.metadata?.deletionTimestamp);
    const mark = crypto.randomUUID();
    // Without load a replica's processes read 0 s of CPU in Zun's TIME column: the HPA scales
    // down only if such a pod still has a CPU figure in metrics-server.
    const script =
      `if [ "$LOAD" = on ]; then sh -c 'while :; do :; done' & fi; echo started; exec sleep 3600`;
    /**
     * Ends the load by a rollout of replicas that do not burn (an exec of pkill into every
     * replica, as before, left both burning for 5 minutes in a full run on a loaded machine).
     */
    const stopBurning = () => kubectl(["set", "env", "deployment/burn", "LOAD=off"]);
    const createdAt = Date.now();
    try {
      await kubectl(
        ["apply", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "List",
          items: [{
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name: "burn" },
            spec: {
              replicas: 1,
              selector: { matchLabels: { app: "burn" } },
              template: {
                metadata: { labels: { app: "burn" } },
                spec: {
                  nodeSelector: { "kubernetes.io/hostname": nodeName },
                  tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
                  terminationGracePeriodSeconds: 1,
                  containers: [{
                    name: "main",
                    image: "localhost/busybox:latest",
                    command: ["sh", "-c", script],
                    env: [{ name: "MARK", value: mark }, { name: "LOAD", value: "on" }],
                    // Zun caps the container at the limit (250m); on this shared machine a burning loop got
                    // about 100m, 40% of the request: the HPA aims at 20%.
                    resources: {
                      requests: { cpu: "250m", memory: "32Mi" },
                      limits: { cpu: "250m", memory: "32Mi" },
                    },
                  }],
                },
              },
            },
          }, {
            apiVersion: "autoscaling/v2",
            kind: "HorizontalPodAutoscaler",
            metadata: { name: "burn" },
            spec: {
              scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "burn" },
              minReplicas: 1,
              maxReplicas: 2,
              metrics: [{
                type: "Resource",
                resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 20 } },
              }],
              behavior: { scaleDown: { stabilizationWindowSeconds: 0 } },
            },
          }],
        }),
      );
      await kubectl(["rollout", "status", "deployment/burn", "--timeout=240s"]);
      const [first] = await pods();
      const name = first.metadata!.name!;

      await t.step("kubectl logs and exec answer from the plain Zun container", async () => {
        assert.equal(await kubectl(["logs", name]), "started\n");
        assert.equal(await kubectl(["exec", name, "--", "sh", "-c", "echo $MARK"]), `${mark}\n`);
        const failed = await kubectl(["exec", name, "--", "sh", "-c", "exit 3"])
          .then(() => "", (e) => String(e));
        assert.match(failed, /exit code 3/);
      });

      await t.step("kubectl top pod shows it burning CPU", async () => {
        const row = await eventually("the pod in kubectl top pod", async () => {
          const out = await kubectl(["top", "pod", name, "--no-headers"]).catch(() => "");
          const [, cpu] = out.trim().split(/\s+/);
          return cpu?.endsWith("m") && Number(cpu.slice(0, -1)) > 50 ? out : undefined;
        }, 6 * metricsServer.resolutionSeconds * 1000);
        console.log(`kubectl top pod: ${row.trim()}`);
      });

      await t.step("the HPA scales it up while it burns, and down once it stops", async () => {
        const replicas = async () =>
          Number(await kubectl(["get", "hpa", "burn", "-o", "jsonpath={.status.desiredReplicas}"]));
        await eventually("2 replicas wanted", async () => await replicas() === 2, 180_000)
          .catch(async (err) => {
            throw new Error(`${err.message}\n${await kubectl(["describe", "hpa", "burn"])}`);
          });
        const upAt = Date.now();
        await stopBurning();
        const stoppedAt = Date.now();
        await eventually("back to 1 replica", async () => await replicas() === 1, 300_000).catch(
          async (err) => {
            throw new Error(`${err.message}\n${await kubectl(["describe", "hpa", "burn"])}`);
          },
        );
        const s = (ms: number) => `${(ms / 1000).toFixed(0)} s`;
        console.log(
          `HPA: up ${s(upAt - createdAt)} after the Deployment, down ${
            s(Date.now() - stoppedAt)
          } after the load stopped`,
        );
      });
    } finally {
      const said = node.output().split("\n").filter((l) => /warn|error|fail/i.test(l));
      if (said.length) console.error(`vkubelet's warnings:\n${said.slice(-30).join("\n")}`);
      await kubectl(["scale", "deployment/burn", "--replicas=0"]).catch(() => {});
      await kubectl(["delete", "hpa", "burn"]).catch(() => {});
      await eventually("no pods left", async () => (await pods()).length === 0, 240_000)
        .catch(() => {});
      await node.stop();
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]).catch(() => {});
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
      await zun.stop();
    }
  },
});
