/**
 * The provider's ECS calls against moto, below the provider: DescribeTasks in batches of at
 * most 100 (counted at the SDK's middleware), ping naming a missing cluster, the log group
 * created once and taken as done after.
 */
import assert from "node:assert/strict";
import { RegisterTaskDefinitionCommand, RunTaskCommand } from "@aws-sdk/client-ecs";
import { isTransient } from "../../../provider/mod.ts";
import { createAwsClients } from "../../../providers/fargate/client/aws.ts";
import { parseFargateConfig } from "../../../providers/fargate/config.ts";
import { EcsTasks } from "../../../providers/fargate/client/tasks.ts";
import { MOTO_ENV, startMoto } from "./_moto.ts";

Deno.test("ECS calls against moto: batches of 100, ping, log group", async (t) => {
  const moto = await startMoto();
  for (const [k, v] of Object.entries(MOTO_ENV)) Deno.env.set(k, v);
  const parsed = parseFargateConfig({
    region: moto.region,
    endpoint: moto.endpoint,
    cluster: moto.cluster,
    subnets: [moto.subnet],
    executionRoleArn: "arn:aws:iam::123456789012:role/exec",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const aws = createAwsClients(parsed.config);
  const calls: string[] = [];
  aws.ecs.middlewareStack.add((next, context) => (args) => {
    calls.push(context.commandName ?? "");
    return next(args);
  });
  const ecs = new EcsTasks(aws, parsed.config);
  try {
    await t.step("DescribeTasks goes in batches of at most 100", async () => {
      const def = await moto.ecs.send(
        new RegisterTaskDefinitionCommand({
          family: "batch",
          requiresCompatibilities: ["FARGATE"],
          networkMode: "awsvpc",
          cpu: "256",
          memory: "512",
          containerDefinitions: [{ name: "main", image: "busybox", memory: 512 }],
        }),
      );
      const arns: string[] = [];
      for (let i = 0; i < 15; i++) {
        const out = await moto.ecs.send(
          new RunTaskCommand({
            cluster: moto.cluster,
            taskDefinition: def.taskDefinition?.taskDefinitionArn,
            launchType: "FARGATE",
            count: 10,
            networkConfiguration: {
              awsvpcConfiguration: { subnets: [moto.subnet], securityGroups: [moto.securityGroup] },
            },
          }),
        );
        arns.push(...(out.tasks ?? []).map((x) => x.taskArn!));
      }
      assert.equal(arns.length, 150);
      calls.length = 0;
      const found = await ecs.describe(arns);
      assert.equal(found.size, 150);
      assert.deepEqual(calls, ["DescribeTasksCommand", "DescribeTasksCommand"]);
    });

    await t.step("ping answers for the cluster and names a missing one", async () => {
      await ecs.ping();
      const other = new EcsTasks(aws, { ...parsed.config, cluster: "nope" });
      await assert.rejects(other.ping(), (err: Error) => {
        assert.ok(isTransient(err));
        assert.match(err.message, /ECS cluster nope is missing/);
        return true;
      });
    });

    await t.step("the log group is created, and existing is fine", async () => {
      await ecs.ensureLogGroup();
      await ecs.ensureLogGroup();
    });
  } finally {
    for (const k of Object.keys(MOTO_ENV)) Deno.env.delete(k);
    aws.ecs.destroy();
    aws.logs.destroy();
    await moto.stop();
  }
});
