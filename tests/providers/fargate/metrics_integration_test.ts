/**
 * `kubectl top` and the HPA for pods on a fargate node, through the real metrics-server: moto's
 * CloudWatch holds the tasks' Container Insights metrics (put there as Container Insights would),
 * vkubelet serves them on /metrics/resource, metrics-server scrapes them; an HPA on a Deployment
 * on the node scales up under load and back down after (its behavior field keeps the timings
 * short). Bounded: each phase gives up after a few HPA syncs.
 */
import assert from "node:assert/strict";
import { useMetricsServer } from "../../../tools/cluster/harness.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { startFargateEnv } from "./_setup.ts";

Deno.test("metrics-server reports fargate pods, and an HPA scales them up and down", async () => {
  const metricsServer = await useMetricsServer();
  const env = await startFargateEnv("fgmetrics", { metricsPeriod: 10 });
  const { kubectl, moto, placement, ns } = env;
  // 256 CPU units a task: a quarter of a vCPU, all of the pods' 250m request.
  let load = { cpuUnits: 256, memoryMiB: 100 };
  const stop = new AbortController();
  const feeding = (async () => {
    while (!stop.signal.aborted) {
      for (const pod of await env.pods("app=web").catch(() => [])) {
        const family = `vk_${ns}_${pod.metadata?.name}`;
        await moto.putTaskUsage(family, load.cpuUnits, load.memoryMiB).catch(() => {});
      }
      await new Promise((r) => setTimeout(r, 2_000));
    }
  })();
  const replicas = async () =>
    Number((await kubectl(["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"])).trim());
  const bound = 4 * metricsServer.resolutionSeconds * 1000 + 60_000;
  try {
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [{
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "web" },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: "web" } },
            template: {
              metadata: { labels: { app: "web" } },
              spec: {
                ...placement,
                terminationGracePeriodSeconds: 5,
                containers: [{
                  name: "main",
                  image: "public.ecr.aws/docker/library/busybox:1.36",
                  command: ["sleep", "3600"],
                  resources: { requests: { cpu: "250m", memory: "512Mi" } },
                }],
              },
            },
          },
        }, {
          apiVersion: "autoscaling/v2",
          kind: "HorizontalPodAutoscaler",
          metadata: { name: "web" },
          spec: {
            scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
            minReplicas: 1,
            maxReplicas: 3,
            metrics: [{
              type: "Resource",
              resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } },
            }],
            behavior: {
              scaleUp: {
                stabilizationWindowSeconds: 0,
                policies: [{ type: "Pods", value: 2, periodSeconds: 15 }],
              },
              scaleDown: {
                stabilizationWindowSeconds: 0,
                policies: [{ type: "Percent", value: 100, periodSeconds: 15 }],
              },
            },
          },
        }],
      }),
    );
    await kubectl(["rollout", "status", "deployment/web", "--timeout=90s"]);

    const top = await eventually(
      "the fargate pod in kubectl top pod",
      async () => {
        const out = await kubectl(["top", "pod", "--no-headers"]).catch(() => "");
        const row = out.trim().split("\n").find((l) => l.startsWith("web-"))?.split(/\s+/);
        return row && row[1] !== "0m" ? row : undefined;
      },
      bound,
      2_000,
    );
    assert.equal(top[1], "250m", "256 CPU units are 250m");
    assert.equal(top[2], "100Mi");

    const up = await eventually(
      "the HPA scaling the Deployment up under load",
      async () => {
        const n = await replicas();
        return n === 3 ? n : undefined;
      },
      bound,
      2_000,
    );
    assert.equal(up, 3);

    load = { cpuUnits: 10, memoryMiB: 100 };
    const down = await eventually(
      "the HPA scaling it back down once idle",
      async () => {
        const n = await replicas();
        return n === 1 ? n : undefined;
      },
      bound + 30_000,
      2_000,
    );
    assert.equal(down, 1);
  } catch (err) {
    const hpa = await kubectl(["describe", "hpa", "web"]).catch(() => "");
    const logged = env.node.output().split("\n").filter((l) => /stats|metric|WARN|ERR/i.test(l));
    throw new Error(
      `${(err as Error).message}\n${hpa}\nvkubelet:\n${logged.slice(-20).join("\n")}`,
      {
        cause: err,
      },
    );
  } finally {
    stop.abort();
    await feeding;
    await env.close();
  }
});
