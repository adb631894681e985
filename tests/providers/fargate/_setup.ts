/**
 * One virtual node with the fargate provider against the local control plane and a fresh moto:
 * what the fargate integration tests share.
 * @module
 */
import {
  DescribeTasksCommand,
  ListTasksCommand,
  StopTaskCommand,
  type Task,
} from "@aws-sdk/client-ecs";
import { CreateLogStreamCommand, PutLogEventsCommand } from "@aws-sdk/client-cloudwatch-logs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { type TestCluster, useCluster } from "../../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../../tools/cluster/vkubelet.ts";
import { type Moto, MOTO_ENV, startMoto } from "./_moto.ts";

/** The log group the tests' provider config names. */
export const LOG_GROUP = "/vkubelet/test";

/** Polls until a check gives a value (the same helper as the kubernetes provider's tests). */

/** A task's tag value. */
export const tag = (task: Task, key: string) => task.tags?.find((t) => t.key === key)?.value;

/** A task's private IPv4 address (data only: never dialled). */
export const taskIp = (task: Task | undefined) =>
  task?.attachments?.find((a) => a.type === "ElasticNetworkInterface")?.details
    ?.find((d) => d.name === "privateIPv4Address")?.value;

/** The node, its cluster, moto and helpers. */
export interface FargateEnv {
  cluster: TestCluster;
  moto: Moto;
  nodeName: string;
  ns: string;
  kubectl: (args: string[], stdin?: string) => Promise<string>;
  /** Scheduling onto the virtual node. */
  placement: { nodeSelector: Record<string, string>; tolerations: unknown[] };
  node: RunningVkubelet;
  /** The namespace's pods with `selector`, leaving out those being deleted. */
  pods(selector: string): Promise<Pod[]>;
  /** Every task moto has for the node (running and stopped), with tags. */
  tasks(): Promise<Task[]>;
  /** The pod's RUNNING tasks. */
  runningTasksOf(pod: Pod): Promise<Task[]>;
  /** StopTask through moto, behind vkubelet's back. */
  stopTask(taskArn: string, reason: string): Promise<void>;
  /** Writes log lines into a container's stream of a task, as the awslogs driver would. */
  writeLog(taskArn: string, container: string, lines: string[]): Promise<void>;
  /** Stops vkubelet and starts it again with the same node, certificate and config. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Starts moto and a vkubelet with `--provider fargate` pointed at it. */
export async function startFargateEnv(
  prefix: string,
  /** Provider config fields besides the tests' own (e.g. `metricsPeriod`). */
  extraConfig: Record<string, unknown> = {},
): Promise<FargateEnv> {
  const cluster = await useCluster();
  const moto = await startMoto();
  const nodeName = `vk-${prefix}-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace(prefix);
  const kubectl = cluster.kubectlIn(ns);
  const providerConfig = JSON.stringify({
    region: moto.region,
    endpoint: moto.endpoint,
    cluster: moto.cluster,
    subnets: [moto.subnet],
    securityGroups: [moto.securityGroup],
    executionRoleArn: "arn:aws:iam::123456789012:role/ecsTaskExecutionRole",
    logGroup: LOG_GROUP,
    tags: { team: "platform" },
    statusInterval: "500ms",
    ...extraConfig,
  });
  const node = await startVkubelet(cluster, {
    nodeName,
    provider: "fargate",
    providerConfig,
    env: MOTO_ENV,
  }).catch(async (err) => {
    await moto.stop();
    throw err;
  });
  const streams = new Set<string>();
  const env: FargateEnv = {
    cluster,
    moto,
    nodeName,
    ns,
    kubectl,
    node,
    placement: {
      nodeSelector: { "kubernetes.io/hostname": nodeName },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
    },
    async pods(selector) {
      const list = JSON.parse(await kubectl(["get", "pods", "-l", selector, "-o", "json"]));
      return (list.items as Pod[]).filter((p) => !p.metadata?.deletionTimestamp);
    },
    async tasks() {
      const list = await moto.ecs.send(
        new ListTasksCommand({ cluster: moto.cluster, startedBy: `vk/${nodeName}` }),
      );
      if (!list.taskArns?.length) return [];
      const out = await moto.ecs.send(
        new DescribeTasksCommand({
          cluster: moto.cluster,
          tasks: list.taskArns,
          include: ["TAGS"],
        }),
      );
      return out.tasks ?? [];
    },
    async runningTasksOf(pod) {
      return (await env.tasks()).filter((x) =>
        tag(x, "vkubelet.io/uid") === pod.metadata?.uid && x.lastStatus === "RUNNING"
      );
    },
    async stopTask(task, reason) {
      await moto.ecs.send(new StopTaskCommand({ cluster: moto.cluster, task, reason }));
    },
    async writeLog(taskArn, container, lines) {
      const stream = `vk/${container}/${taskArn.split("/").at(-1)}`;
      if (!streams.has(stream)) {
        await moto.logs.send(
          new CreateLogStreamCommand({ logGroupName: LOG_GROUP, logStreamName: stream }),
        );
        streams.add(stream);
      }
      const now = Date.now();
      await moto.logs.send(
        new PutLogEventsCommand({
          logGroupName: LOG_GROUP,
          logStreamName: stream,
          logEvents: lines.map((message, i) => ({ message, timestamp: now + i })),
        }),
      );
    },
    async restart() {
      await env.node.stop();
      env.node = await startVkubelet(cluster, {
        nodeName,
        provider: "fargate",
        like: env.node,
        env: MOTO_ENV,
      });
    },
    async close() {
      await env.node.stop();
      await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
      await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
      await moto.stop();
    },
  };
  return env;
}
