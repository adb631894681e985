/**
 * `--leader-elect` with the fargate provider: a standby's ECS and CloudWatch Logs clients read
 * but change nothing (issue 41, item 9), against moto.
 * @module
 */
import assert from "node:assert/strict";
import {
  ListTaskDefinitionsCommand,
  RegisterTaskDefinitionCommand,
  RunTaskCommand,
} from "@aws-sdk/client-ecs";
import type { WriteFence } from "../../../provider/mod.ts";
import { createAwsClients } from "../../../providers/fargate/client/aws.ts";
import { parseFargateConfig } from "../../../providers/fargate/config.ts";
import { fenceAwsClients } from "../../../providers/fargate/fence.ts";
import { MOTO_ENV, startMoto } from "./_moto.ts";

Deno.test("a standby's ECS client refuses RunTask and RegisterTaskDefinition before sending them; reads pass", async () => {
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
  let leading = false;
  const fence: WriteFence = {
    get open() {
      return leading;
    },
    check(what) {
      if (!leading) throw new Error(`${what} refused: not the leader`);
    },
    guardRequest() {},
  };
  const aws = fenceAwsClients(createAwsClients(parsed.config), fence);
  const definition = new RegisterTaskDefinitionCommand({
    family: "fenced",
    requiresCompatibilities: ["FARGATE"],
    networkMode: "awsvpc",
    cpu: "256",
    memory: "512",
    containerDefinitions: [{ name: "main", image: "nginx" }],
  });
  try {
    await assert.rejects(aws.ecs.send(definition), /AWS RegisterTaskDefinition.* refused/);
    await assert.rejects(
      aws.ecs.send(new RunTaskCommand({ cluster: moto.cluster, taskDefinition: "fenced" })),
      /AWS RunTask.* refused/,
    );
    const listed = await aws.ecs.send(new ListTaskDefinitionsCommand({ familyPrefix: "fenced" }));
    assert.deepEqual(listed.taskDefinitionArns, [], "nothing reached ECS");
    leading = true;
    await aws.ecs.send(definition);
    const after = await aws.ecs.send(new ListTaskDefinitionsCommand({ familyPrefix: "fenced" }));
    assert.equal(after.taskDefinitionArns?.length, 1, "the leader's call went through");
  } finally {
    aws.ecs.destroy();
    aws.logs.destroy();
    await moto.stop();
  }
});
