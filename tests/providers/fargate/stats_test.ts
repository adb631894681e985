/**
 * The fargate provider's stats from CloudWatch Container Insights in moto: a running pod's CPU
 * and memory are its task's newest averages, shared among its containers by their requests; the
 * cumulative CPU counter metrics-server needs grows by rate × time; a pod without data is left
 * out; 300 pods take two GetMetricData calls (500 queries each at most).
 */
import assert from "node:assert/strict";
import type { Task } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { Throttle } from "../../../providers/fargate/client/throttle.ts";
import { type RunningPod, TaskStats } from "../../../providers/fargate/stats.ts";
import { startMoto } from "./_moto.ts";

const startedAtMs = Date.now() - 60_000;

function running(name: string, containers: Pod["spec"] = { containers: [] }): RunningPod {
  const pod: Pod = { metadata: { namespace: "ns", name, uid: `uid-${name}` }, spec: containers };
  const reports = Object.fromEntries(
    (containers?.containers ?? []).map((c) => [c.name, { state: { running: { startedAtMs } } }]),
  );
  return {
    pod,
    run: { pod, containers: reports } as RunningPod["run"] & { handle?: Task },
    startTimeMs: startedAtMs,
  };
}

Deno.test("stats from Container Insights in moto: usage, shares, counters, batches", async () => {
  const moto = await startMoto();
  const calls: string[] = [];
  moto.cloudwatch.middlewareStack.add((next, context) => (args) => {
    calls.push(context.commandName ?? "");
    return next(args);
  });
  let nowMs = Date.now() + 1000;
  const stats = new TaskStats({
    cloudwatch: moto.cloudwatch,
    config: { cluster: moto.cluster, metricsPeriod: 10 },
    throttle: new Throttle(),
    clock: { now: () => nowMs },
    nodeName: "n1",
  });
  try {
    const web = running("web", {
      containers: [
        { name: "app", resources: { requests: { cpu: "750m", memory: "384Mi" } } },
        { name: "proxy", resources: { requests: { cpu: "250m", memory: "128Mi" } } },
      ],
    });
    const idle = running("idle", { containers: [{ name: "main" }] });
    await moto.putTaskUsage("vk_ns_web", 512, 256);
    calls.length = 0;
    const first = await stats.summary([web, idle]);
    assert.deepEqual(first.pods.map((p) => p.podRef.name), ["web"], "no data, no stats");
    const pod = first.pods[0];
    assert.equal(pod.cpu?.usageNanoCores, 0.5e9, "512 CPU units are half a core");
    assert.equal(pod.memory?.workingSetBytes, 256 * 1024 * 1024);
    const [app, proxy] = pod.containers;
    assert.equal(app.cpu?.usageNanoCores, 0.375e9, "shared by CPU requests, 3:1");
    assert.equal(proxy.memory?.workingSetBytes, 64 * 1024 * 1024, "and memory requests, 3:1");
    const counter = app.cpu!.usageCoreNanoSeconds!;
    // From the container's start at the rate seen: 0.375 core for ~61 s.
    assert.ok(Math.abs(counter - 0.375e9 * (nowMs - startedAtMs) / 1000) < 1e6, `${counter}`);
    assert.equal(first.node.cpu?.usageNanoCores, 0.5e9, "the node sums its pods");

    nowMs += 10_000;
    const second = await stats.summary([web, idle]);
    const grown = second.pods[0].containers[0].cpu!.usageCoreNanoSeconds! - counter;
    assert.ok(Math.abs(grown - 0.375e9 * 10) < 1e6, `grew by rate × 10 s: ${grown}`);
    assert.deepEqual(calls, ["GetMetricDataCommand", "GetMetricDataCommand"]);

    calls.length = 0;
    const many = Array.from(
      { length: 300 },
      (_, i) => running(`p${i}`, { containers: [{ name: "c" }] }),
    );
    await stats.summary(many);
    assert.deepEqual(
      calls,
      ["GetMetricDataCommand", "GetMetricDataCommand"],
      "600 queries, 2 calls",
    );
  } finally {
    await moto.stop();
  }
});
