/**
 * The OpenTelemetry Collector (tools/otelcol, docs/logging.md's config) tails the pod log
 * directory of a vkubelet running the fargate provider against moto (ECS and CloudWatch Logs):
 * the lines the test writes into a task's log stream, as the awslogs driver would, are mirrored
 * by the kit and arrive once, in order, with the pod's metadata and restart count — the task's
 * lines, and after its stop (a restart of the pod's containers) the next task's, through
 * rotations (a 2 KiB --container-log-max-size) and a vkubelet restart with lines written while
 * it was away.
 */
import assert from "node:assert/strict";
import { DescribeTasksCommand, ListTasksCommand, StopTaskCommand } from "@aws-sdk/client-ecs";
import {
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from "@aws-sdk/client-cloudwatch-logs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { useCluster } from "../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { eventually } from "../../tools/harness/wait.ts";
import { MOTO_ENV, startMoto } from "../providers/fargate/_moto.ts";
import {
  assertAllLabelled,
  assertCounted,
  describeLogs,
  rotatedFiles,
  startLogAgent,
} from "./_collector_checks.ts";

const LOG_GROUP = "/vkubelet/collector-test";
const PAD = "y".repeat(100);

Deno.test("collector: a fargate pod's CloudWatch lines arrive once, in order, labelled, through a task restart, rotations and vkubelet's restart", async () => {
  const cluster = await useCluster();
  const moto = await startMoto();
  const agent = await startLogAgent("collector-fargate");
  const nodeName = `vk-otel-fg-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("otel-fg");
  const kubectl = cluster.kubectlIn(ns);
  await moto.logs.send(new CreateLogGroupCommand({ logGroupName: LOG_GROUP })).catch(() => {});
  const start = (like?: RunningVkubelet) =>
    startVkubelet(cluster, {
      nodeName,
      provider: "fargate",
      providerConfig: like ? undefined : JSON.stringify({
        region: moto.region,
        endpoint: moto.endpoint,
        cluster: moto.cluster,
        subnets: [moto.subnet],
        securityGroups: [moto.securityGroup],
        executionRoleArn: "arn:aws:iam::123456789012:role/ecsTaskExecutionRole",
        logGroup: LOG_GROUP,
        statusInterval: "500ms",
      }),
      like,
      env: MOTO_ENV,
      args: agent.flags("2Ki"),
    });
  const runningTask = async (pod: Pod) => {
    const list = await moto.ecs.send(
      new ListTasksCommand({ cluster: moto.cluster, startedBy: `vk/${nodeName}` }),
    );
    if (!list.taskArns?.length) return undefined;
    const { tasks = [] } = await moto.ecs.send(
      new DescribeTasksCommand({ cluster: moto.cluster, tasks: list.taskArns, include: ["TAGS"] }),
    );
    return tasks.find((t) =>
      t.lastStatus === "RUNNING" &&
      t.tags?.some((x) => x.key === "vkubelet.io/uid" && x.value === pod.metadata?.uid)
    )?.taskArn;
  };
  // Lines into the task's stream, as the awslogs driver writes them, each its own millisecond.
  let clock = Date.now();
  const write = async (taskArn: string, tag: string, from: number, to: number) => {
    const logStreamName = `vk/main/${taskArn.split("/").at(-1)}`;
    await moto.logs.send(new CreateLogStreamCommand({ logGroupName: LOG_GROUP, logStreamName }))
      .catch(() => {});
    const logEvents = [];
    for (let i = from; i <= to; i++) {
      clock = Math.max(clock + 1, Date.now());
      logEvents.push({ message: `${tag} ${i} ${PAD}`, timestamp: clock });
    }
    await moto.logs.send(
      new PutLogEventsCommand({ logGroupName: LOG_GROUP, logStreamName, logEvents }),
    );
  };
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
          containers: [{ name: "main", image: "busybox" }],
        },
      }),
    );
    const pod: Pod = JSON.parse(await kubectl(["get", "pod", "talker", "-o", "json"]));
    const firstTask = await eventually("the pod's task", () => runningTask(pod), 60_000);
    // Three batches; past 2 KiB the file is rotated once it has been current for 10 s, so at
    // the second batch's first line.
    for (const [from, to] of [[1, 15], [16, 30], [31, 45]]) {
      await write(firstTask, "a", from, to);
      await agent.waitFor(pod, "main", 0, (b) => b.length >= to, `a ${to}`);
      if (from === 1) await new Promise((r) => setTimeout(r, 10_500));
    }
    assert.ok((await rotatedFiles(agent, pod, "main", 0)).length > 0, "0.log was rotated");

    // The task stops behind vkubelet's back: the pod's containers restart in a new task.
    await moto.ecs.send(
      new StopTaskCommand({ cluster: moto.cluster, task: firstTask, reason: "spot interruption" }),
    );
    const secondTask = await eventually("a new task", async () => {
      const arn = await runningTask(pod);
      return arn !== firstTask && arn;
    }, 90_000);
    await write(secondTask, "b", 1, 20);
    await agent.waitFor(pod, "main", 1, (b) => b.length >= 20, "b 20");

    // vkubelet stops; lines are written while it is away, and after it is back.
    await vk.stop();
    const away = vk;
    vk = undefined;
    await write(secondTask, "b", 21, 40);
    vk = await start(away);
    await write(secondTask, "b", 41, 60);
    await agent.waitFor(pod, "main", 1, (b) => b.length >= 60, "b 60");
    await new Promise((r) => setTimeout(r, 2000)); // nothing more may come
    const bodies = (await agent.instance(pod, "main", 1)).map((r) => r.body);
    assert.equal(assertCounted(bodies, "b", 60), 60);
    assert.equal(
      assertCounted((await agent.instance(pod, "main", 0)).map((r) => r.body), "a", 45),
      45,
    );
    await assertAllLabelled(agent, pod);

    await kubectl(["delete", "pod", "talker", "--wait=true", "--timeout=60s"]);
    const podDir = `${agent.podLogDir}/${ns}_talker_${pod.metadata!.uid}`;
    await eventually(
      "the pod's log directory removed",
      () => Deno.stat(podDir).then(() => false, () => true),
      20_000,
    );
  } catch (err) {
    const pod = JSON.parse(await kubectl(["get", "pod", "talker", "-o", "json"]).catch(() => "{}"));
    console.error(`${await describeLogs(agent, pod)}\nvkubelet said: ${vk?.output().slice(-3000)}`);
    throw err;
  } finally {
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await vk?.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await agent.close();
    await moto.stop();
  }
});
