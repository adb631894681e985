/**
 * `kubectl top` and the HorizontalPodAutoscaler on an aci node: the real metrics-server scrapes
 * vkubelet's `/metrics/resource`, whose figures come from Azure Monitor's `CpuUsage` and
 * `MemoryUsage` of each container group (the emulator's Metrics - List answer, in its documented
 * shape: Microsoft.Insights' description could not be had, so these reads are not behind Prism).
 */
import assert from "node:assert/strict";
import { useMetricsServer } from "../../../tools/cluster/harness.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { startAciEnv } from "./_setup.ts";

const MiB = 2 ** 20;

Deno.test("metrics-server reports aci pods from Azure Monitor and an HPA scales on it", async (t) => {
  const metricsServer = await useMetricsServer();
  const env = await startAciEnv("aci-top");
  let load = 250;
  env.backend.emu.usage = () => ({ cpuMillicores: load, memoryBytes: 48 * MiB });
  const scrapes = metricsServer.resolutionSeconds * 1000;
  try {
    await env.kubectl(["apply", "-f", "-"], JSON.stringify(deployment(env.placement)));
    await eventually("the pod runs", async () => {
      const pods = await env.pods("app=busy");
      return pods.some((p) => p.status?.phase === "Running") || undefined;
    }, 60_000);

    await t.step("kubectl top pod shows the group's CPU and memory", async () => {
      const row = await eventually("the pod in kubectl top pod", async () => {
        const res = await env.cluster.kubectl(["top", "pod", "-n", env.ns, "--no-headers"]);
        const rows = res.code === 0 ? res.stdout.trim().split("\n").filter(Boolean) : [];
        return rows.map((l) => l.trim().split(/\s+/)).find((r) => r[0].startsWith("busy-"));
      }, 6 * scrapes);
      const millicores = Number(row[1].replace(/m$/, ""));
      assert.ok(Math.abs(millicores - 250) <= 5, `CPU ${row[1]}, Azure Monitor said 250m`);
      assert.equal(row[2], "48Mi");
    });

    await t.step("an HPA scales the Deployment up under load and down after", async () => {
      await env.kubectl(["apply", "-f", "-"], JSON.stringify(HPA));
      const replicas = async () =>
        Number(await env.kubectl(["get", "deployment", "busy", "-o", "jsonpath={.spec.replicas}"]));
      await eventually(
        "scaled up to 3",
        async () => (await replicas()) === 3 || undefined,
        120_000,
      );
      load = 5;
      await eventually(
        "scaled down to 1",
        async () => (await replicas()) === 1 || undefined,
        180_000,
      );
    });
  } finally {
    await env.kubectl(["delete", "hpa", "busy", "--ignore-not-found"]).catch(() => {});
    await env.close();
  }
});

/** A Deployment of one pod asking 100m of CPU, on the aci node. */
function deployment(placement: { nodeSelector: Record<string, string>; tolerations: unknown[] }) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "busy" },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "busy" } },
      template: {
        metadata: { labels: { app: "busy" } },
        spec: {
          ...placement,
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          containers: [{
            name: "main",
            image: "busybox",
            command: ["sleep", "3600"],
            resources: { requests: { cpu: "100m", memory: "64Mi" } },
          }],
        },
      },
    },
  };
}

/** 50% of the request as the target; no stabilization, so that the test need not wait 5 min. */
const HPA = {
  apiVersion: "autoscaling/v2",
  kind: "HorizontalPodAutoscaler",
  metadata: { name: "busy" },
  spec: {
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "busy" },
    minReplicas: 1,
    maxReplicas: 3,
    metrics: [{
      type: "Resource",
      resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } },
    }],
    behavior: {
      scaleUp: { stabilizationWindowSeconds: 0 },
      scaleDown: {
        stabilizationWindowSeconds: 0,
        policies: [{ type: "Percent", value: 100, periodSeconds: 15 }],
      },
    },
  },
};
