/**
 * The fargate provider runs the provider conformance suite (provider/testing) against moto: the
 * provider in this process, its tasks in one moto that every instance the suite starts (another
 * node, a restart) shares, on the real clock so that the status loop runs.
 *
 * moto has no awslogs driver, so the harness plays its part: after a pod's task starts, the
 * lines the suite's pod prints are written into its log stream through moto. Skipped: `exec` —
 * ECS Exec needs AWS's Session Manager channel, which the provider does not speak (and moto
 * does not implement ExecuteCommand); the provider answers NotSupportedError.
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { runProviderConformance } from "../../../provider/testing/mod.ts";
import { createProvider } from "../../../providers/fargate/mod.ts";
import { MOTO_ENV, startMoto } from "./_moto.ts";
import { DescribeTasksCommand, ListTasksCommand } from "@aws-sdk/client-ecs";
import { CreateLogStreamCommand, PutLogEventsCommand } from "@aws-sdk/client-cloudwatch-logs";

Deno.test("the fargate provider keeps the provider contract", async (t) => {
  const moto = await startMoto();
  for (const [k, v] of Object.entries(MOTO_ENV)) Deno.env.set(k, v);
  const config = {
    region: moto.region,
    endpoint: moto.endpoint,
    cluster: moto.cluster,
    subnets: [moto.subnet],
    securityGroups: [moto.securityGroup],
    executionRoleArn: "arn:aws:iam::123456789012:role/exec",
    logGroup: "/vkubelet/conformance",
    statusInterval: "300ms",
  };
  /** What the awslogs driver would write for the pod's container `main`, once per task. */
  const written = new Set<string>();
  const writeLog = async (pod: Pod, nodeName: string) => {
    const list = await moto.ecs.send(
      new ListTasksCommand({ cluster: moto.cluster, startedBy: `vk/${nodeName}` }),
    );
    if (!list.taskArns?.length) return;
    const described = await moto.ecs.send(
      new DescribeTasksCommand({ cluster: moto.cluster, tasks: list.taskArns, include: ["TAGS"] }),
    );
    for (const task of described.tasks ?? []) {
      const uid = task.tags?.find((x) => x.key === "vkubelet.io/uid")?.value;
      if (uid !== pod.metadata?.uid || written.has(task.taskArn!)) continue;
      written.add(task.taskArn!);
      const stream = `vk/main/${task.taskArn!.split("/").at(-1)}`;
      await moto.logs.send(
        new CreateLogStreamCommand({ logGroupName: config.logGroup, logStreamName: stream }),
      );
      const now = Date.now();
      await moto.logs.send(
        new PutLogEventsCommand({
          logGroupName: config.logGroup,
          logStreamName: stream,
          logEvents: ["line one", "line two", "line three"].map((message, i) => ({
            message,
            timestamp: now + i,
          })),
        }),
      );
    }
  };
  try {
    await runProviderConformance(t, {
      nodeName: `vk-conformance-${crypto.randomUUID().slice(0, 6)}`,
      clock: realClock,
      create: (deps) => {
        const provider = createProvider(config, deps);
        const createPod = provider.createPod.bind(provider);
        provider.createPod = async (pod, options) => {
          await createPod(pod, options);
          await writeLog(pod, deps.nodeName);
        };
        return provider;
      },
      skip: ["exec"],
    });
  } finally {
    for (const k of Object.keys(MOTO_ENV)) Deno.env.delete(k);
    await moto.stop();
  }
});
