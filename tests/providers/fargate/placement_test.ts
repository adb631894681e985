/**
 * ARM64 and FARGATE_SPOT from the node config or a pod's annotations: the task definition's
 * `runtimePlatform` and RunTask's capacity provider strategy (instead of the FARGATE launch type),
 * a bad annotation refused naming it; and the task definition of a pod with init containers on
 * ARM64, registered and run on FARGATE_SPOT through moto, comes back as sent; the node is labelled
 * with the tasks' architecture.
 */
import assert from "node:assert/strict";
import { DescribeTaskDefinitionCommand } from "@aws-sdk/client-ecs";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { createAwsClients } from "../../../providers/fargate/client/aws.ts";
import { EcsTasks } from "../../../providers/fargate/client/tasks.ts";
import { parseFargateConfig } from "../../../providers/fargate/config.ts";
import { capacityStrategyOf } from "../../../providers/fargate/request/placement.ts";
import { taskDefinitionFor } from "../../../providers/fargate/request/task_definition.ts";
import { config, ecsPod } from "./_fake_ecs.ts";
import { MOTO_ENV, startMoto } from "./_moto.ts";
import { startProviderOnMoto } from "./_provider.ts";

const annotated = (annotations: Record<string, string>): Pod => {
  const pod = ecsPod();
  pod.metadata!.annotations = annotations;
  return pod;
};

Deno.test("X86_64 on FARGATE by default; ARM64 and FARGATE_SPOT from the config", () => {
  assert.equal(taskDefinitionFor(ecsPod(), config, "n1").input.runtimePlatform, undefined);
  assert.equal(capacityStrategyOf(ecsPod(), config), undefined);
  const arm = {
    ...config,
    cpuArchitecture: "ARM64" as const,
    capacityProvider: "FARGATE_SPOT" as const,
  };
  assert.deepEqual(taskDefinitionFor(ecsPod(), arm, "n1").input.runtimePlatform, {
    cpuArchitecture: "ARM64",
    operatingSystemFamily: "LINUX",
  });
  assert.deepEqual(capacityStrategyOf(ecsPod(), arm), [{
    capacityProvider: "FARGATE_SPOT",
    weight: 1,
  }]);
});

Deno.test("a pod's annotations choose ARM64 and FARGATE_SPOT; a bad value is refused", () => {
  const pod = annotated({
    "fargate.vkubelet.io/cpu-architecture": "ARM64",
    "fargate.vkubelet.io/capacity-provider": "FARGATE_SPOT",
  });
  assert.equal(
    taskDefinitionFor(pod, config, "n1").input.runtimePlatform?.cpuArchitecture,
    "ARM64",
  );
  assert.equal(capacityStrategyOf(pod, config)?.[0].capacityProvider, "FARGATE_SPOT");
  const bad = annotated({ "fargate.vkubelet.io/cpu-architecture": "arm" });
  assert.throws(
    () => taskDefinitionFor(bad, config, "n1"),
    /fargate\.vkubelet\.io\/cpu-architecture"\]: "arm" is not one of X86_64, ARM64/,
  );
  assert.equal(parseFargateConfig({ ...config, capacityProvider: "EC2" }).ok, false);
});

Deno.test("moto takes an ARM64 task definition with init containers and a FARGATE_SPOT RunTask", async () => {
  const moto = await startMoto();
  for (const [k, v] of Object.entries(MOTO_ENV)) Deno.env.set(k, v);
  const parsed = parseFargateConfig({
    region: moto.region,
    endpoint: moto.endpoint,
    cluster: moto.cluster,
    subnets: [moto.subnet],
    // moto's RunTask fails without security groups.
    securityGroups: [moto.securityGroup],
    executionRoleArn: "arn:aws:iam::123456789012:role/exec",
    cpuArchitecture: "ARM64",
    capacityProvider: "FARGATE_SPOT",
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const aws = createAwsClients(parsed.config);
  const sent: Record<string, unknown>[] = [];
  aws.ecs.middlewareStack.add((next, context) => (args) => {
    if (context.commandName === "RunTaskCommand") sent.push(args.input as Record<string, unknown>);
    return next(args);
  });
  try {
    const pod = ecsPod();
    pod.spec!.initContainers = [{ name: "setup", image: "busybox" }];
    const plan = taskDefinitionFor(pod, parsed.config, "n1");
    const ecs = new EcsTasks(aws, parsed.config);
    const arn = await ecs.register(plan.input);
    const task = await ecs.run(arn, {
      startedBy: "vk/n1",
      tags: [],
      clientToken: "t-0",
      capacityProviderStrategy: capacityStrategyOf(pod, parsed.config),
    });
    assert.ok(task.taskArn);
    assert.deepEqual(sent[0].capacityProviderStrategy, [{
      capacityProvider: "FARGATE_SPOT",
      weight: 1,
    }]);
    assert.equal(sent[0].launchType, undefined, "ECS takes a strategy or a launch type");
    const def = (await moto.ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: arn })))
      .taskDefinition!;
    assert.equal(def.runtimePlatform?.cpuArchitecture, "ARM64");
    const [setup, main] = def.containerDefinitions!;
    assert.equal(setup.essential, false);
    assert.deepEqual(main.dependsOn, [{ containerName: "setup", condition: "SUCCESS" }]);
  } finally {
    for (const k of Object.keys(MOTO_ENV)) Deno.env.delete(k);
    aws.ecs.destroy();
    aws.logs.destroy();
    aws.secrets.destroy();
    await moto.stop();
  }
});

Deno.test("the node's kubernetes.io/arch is the tasks' architecture, not vkubelet's host", async () => {
  for (const [cpuArchitecture, arch] of [["ARM64", "arm64"], ["X86_64", "amd64"]]) {
    const env = await startProviderOnMoto({ cpuArchitecture });
    try {
      // What the core's template gives before the provider has its say: the host's arch.
      const node: Node = {
        metadata: { name: "n1", labels: { "kubernetes.io/arch": "s390x" } },
        status: {},
      };
      env.provider.configureNode(node);
      assert.equal(node.metadata?.labels?.["kubernetes.io/arch"], arch, cpuArchitecture);
    } finally {
      await env.close();
    }
  }
});
