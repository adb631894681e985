/**
 * The ECS and CloudWatch Logs calls the provider makes, one function each, with AWS errors
 * turned into provider errors; every ECS call goes through one back-off on throttling
 * (`./throttle.ts`). The README's IAM policy lists exactly these actions.
 * @module
 */
import {
  type CapacityProviderStrategyItem,
  DeleteTaskDefinitionsCommand,
  DeregisterTaskDefinitionCommand,
  DescribeClustersCommand,
  DescribeTasksCommand,
  ListTasksCommand,
  RegisterTaskDefinitionCommand,
  type RegisterTaskDefinitionCommandInput,
  RunTaskCommand,
  StopTaskCommand,
  type Tag,
  type Task,
} from "@aws-sdk/client-ecs";
import { CreateLogGroupCommand } from "@aws-sdk/client-cloudwatch-logs";
import { InvalidInputError, TransientError } from "../../../provider/mod.ts";
import { type AwsClients, awsError, awsErrorName } from "./aws.ts";
import type { FargateConfig } from "../config.ts";
import { Throttle } from "./throttle.ts";

/** DescribeTasks takes at most this many tasks per call. */
export const DESCRIBE_BATCH = 100;

/** ECS operations for one cluster. */
export class EcsTasks {
  readonly #aws: AwsClients;
  readonly #config: FargateConfig;
  /** One back-off for every ECS call (`./throttle.ts`). */
  readonly throttle: Throttle;

  constructor(aws: AwsClients, config: FargateConfig, throttle = new Throttle()) {
    this.#aws = aws;
    this.#config = config;
    this.throttle = throttle;
  }

  /** An ECS call through the shared back-off on throttling. */
  #send<T>(
    call: (options: { abortSignal?: AbortSignal }) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.throttle.run(() => call({ abortSignal: signal }), signal);
  }

  /** `ecs:DescribeClusters`: cheap, and fails when the cluster is gone. */
  async ping(signal?: AbortSignal): Promise<void> {
    const out = await this.#send((o) =>
      this.#aws.ecs.send(
        new DescribeClustersCommand({ clusters: [this.#config.cluster] }),
        o,
      ), signal).catch((err) => {
        throw awsError("ECS DescribeClusters", err);
      });
    const cluster = out.clusters?.[0];
    if (!cluster || cluster.status !== "ACTIVE") {
      throw new TransientError(
        `ECS cluster ${this.#config.cluster} is ${
          cluster?.status ?? "missing"
        }; create it or fix "cluster" in the provider config`,
      );
    }
  }

  /** `logs:CreateLogGroup`, taking "already exists" as done. */
  async ensureLogGroup(signal?: AbortSignal): Promise<void> {
    try {
      await this.#aws.logs.send(
        new CreateLogGroupCommand({ logGroupName: this.#config.logGroup }),
        {
          abortSignal: signal,
        },
      );
    } catch (err) {
      if (awsErrorName(err) === "ResourceAlreadyExistsException") return;
      throw awsError(`creating log group ${this.#config.logGroup}`, err);
    }
  }

  /** `ecs:RegisterTaskDefinition` (and `ecs:TagResource` for its tags); the new ARN. */
  async register(input: RegisterTaskDefinitionCommandInput, signal?: AbortSignal): Promise<string> {
    const out = await this.#send(
      (o) => this.#aws.ecs.send(new RegisterTaskDefinitionCommand(input), o),
      signal,
    ).catch((err) => {
      throw awsError(`registering task definition ${input.family}`, err);
    });
    const arn = out.taskDefinition?.taskDefinitionArn;
    if (!arn) throw new TransientError(`ECS registered ${input.family} but returned no ARN`);
    return arn;
  }

  /** `ecs:RunTask` of one task on FARGATE (or FARGATE_SPOT) in the configured subnets. */
  async run(
    taskDefinitionArn: string,
    options: {
      startedBy: string;
      tags: Tag[];
      clientToken: string;
      /** FARGATE_SPOT's strategy (`../request/placement.ts`); default `launchType: FARGATE`. */
      capacityProviderStrategy?: CapacityProviderStrategyItem[];
      signal?: AbortSignal;
    },
  ): Promise<Task> {
    const c = this.#config;
    const out = await this.#send((o) =>
      this.#aws.ecs.send(
        new RunTaskCommand({
          cluster: c.cluster,
          taskDefinition: taskDefinitionArn,
          // ECS takes a launch type or a capacity provider strategy, not both.
          ...(options.capacityProviderStrategy
            ? { capacityProviderStrategy: options.capacityProviderStrategy }
            : { launchType: "FARGATE" as const }),
          platformVersion: c.platformVersion,
          count: 1,
          startedBy: options.startedBy,
          tags: options.tags,
          clientToken: options.clientToken,
          networkConfiguration: {
            awsvpcConfiguration: {
              subnets: c.subnets,
              securityGroups: c.securityGroups.length ? c.securityGroups : undefined,
              assignPublicIp: c.assignPublicIp ? "ENABLED" : "DISABLED",
            },
          },
        }),
        o,
      ), options.signal).catch((err) => {
        throw awsError(`running a task of ${taskDefinitionArn}`, err);
      });
    const task = out.tasks?.[0];
    if (!task?.taskArn) {
      const failure = out.failures?.map((f) => `${f.reason}${f.detail ? ` (${f.detail})` : ""}`)
        .join("; ");
      // Capacity and similar RunTask failures are worth another try.
      throw new TransientError(`ECS RunTask started no task: ${failure || "no reason given"}`);
    }
    return task;
  }

  /** `ecs:StopTask`; a task ECS no longer knows counts as stopped. */
  async stop(taskArn: string, reason: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.#send((o) =>
        this.#aws.ecs.send(
          new StopTaskCommand({ cluster: this.#config.cluster, task: taskArn, reason }),
          o,
        ), signal);
    } catch (err) {
      const name = awsErrorName(err);
      if (name === "InvalidParameterException" || name === "ResourceNotFoundException") return;
      throw awsError(`stopping task ${taskArn}`, err);
    }
  }

  /**
   * `ecs:DeregisterTaskDefinition`, then `ecs:DeleteTaskDefinitions`: an INACTIVE definition
   * stays readable (with its env) until deleted. One already gone counts as done.
   */
  async deregister(taskDefinitionArn: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.#send((o) =>
        this.#aws.ecs.send(
          new DeregisterTaskDefinitionCommand({ taskDefinition: taskDefinitionArn }),
          o,
        ), signal);
    } catch (err) {
      if (awsError("", err) instanceof InvalidInputError) return;
      throw awsError(`deregistering ${taskDefinitionArn}`, err);
    }
    const out = await this.#send((o) =>
      this.#aws.ecs.send(
        new DeleteTaskDefinitionsCommand({ taskDefinitions: [taskDefinitionArn] }),
        o,
      ), signal).catch((err) => {
        throw awsError(`deleting ${taskDefinitionArn}`, err);
      });
    const failure = out.failures?.find((f) => !/does not exist/i.test(f.reason ?? ""));
    if (failure) {
      throw new TransientError(`ECS did not delete ${taskDefinitionArn}: ${failure.reason}`);
    }
  }

  /**
   * `ecs:DescribeTasks` (with tags) in batches of 100; tasks ECS does not know are left out of
   * the answer, so a missing ARN means the task is gone.
   */
  async describe(taskArns: string[], signal?: AbortSignal): Promise<Map<string, Task>> {
    const found = new Map<string, Task>();
    for (let i = 0; i < taskArns.length; i += DESCRIBE_BATCH) {
      const out = await this.#send((o) =>
        this.#aws.ecs.send(
          new DescribeTasksCommand({
            cluster: this.#config.cluster,
            tasks: taskArns.slice(i, i + DESCRIBE_BATCH),
            include: ["TAGS"],
          }),
          o,
        ), signal).catch((err) => {
          throw awsError("ECS DescribeTasks", err);
        });
      for (const task of out.tasks ?? []) if (task.taskArn) found.set(task.taskArn, task);
    }
    return found;
  }

  /** `ecs:ListTasks` of the tasks this node started that are meant to run, every page. */
  async listStartedBy(startedBy: string, signal?: AbortSignal): Promise<string[]> {
    const arns: string[] = [];
    let nextToken: string | undefined;
    do {
      const out = await this.#send((o) =>
        this.#aws.ecs.send(
          new ListTasksCommand({
            cluster: this.#config.cluster,
            startedBy,
            desiredStatus: "RUNNING",
            nextToken,
          }),
          o,
        ), signal).catch((err) => {
          throw awsError("ECS ListTasks", err);
        });
      arns.push(...(out.taskArns ?? []));
      nextToken = out.nextToken;
    } while (nextToken);
    return arns;
  }
}
