/**
 * The fargate backend on RemotePods with a fake of our own ECS calls and a fake clock: for what
 * moto cannot show (tasks do not stop on their own there, health checks do not run, back-off
 * takes minutes).
 * @module
 */
import type { Tag, Task } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { getLogger } from "../../../base/log.ts";
import { RemotePods } from "../../../provider/mod.ts";
import { FargateBackend } from "../../../providers/fargate/backend.ts";
import { type FargateConfig, parseFargateConfig } from "../../../providers/fargate/config.ts";
import { FakeClock } from "../../fakes/clock.ts";

const parsed = parseFargateConfig({
  region: "eu-west-1",
  subnets: ["subnet-0abc"],
  executionRoleArn: "arn:aws:iam::123456789012:role/exec",
});
if (!parsed.ok) throw new Error(parsed.errors.join("; "));
/** A valid config for the backend. */
export const config: FargateConfig = parsed.config;

/** ECS in memory: tasks by ARN, and the calls made. */
export class FakeEcs {
  readonly tasks = new Map<string, Task>();
  readonly started: string[] = [];
  readonly stopped: string[] = [];
  readonly tokens: string[] = [];
  readonly deregistered: string[] = [];
  /** What ListTasks answers; default every task not STOPPED. */
  listed?: string[];
  serial = 0;

  constructor(readonly clock: FakeClock) {}

  describe(arns: string[]): Promise<Map<string, Task>> {
    return Promise.resolve(
      new Map(arns.flatMap((a) => this.tasks.has(a) ? [[a, this.tasks.get(a)!]] : [])),
    );
  }
  listStartedBy(): Promise<string[]> {
    const running = [...this.tasks.values()].filter((t) => t.lastStatus !== "STOPPED");
    return Promise.resolve(this.listed ?? running.map((t) => t.taskArn!));
  }
  stop(arn: string): Promise<void> {
    this.stopped.push(arn);
    return Promise.resolve();
  }
  run(_def: string, options: { tags: Tag[]; clientToken: string }): Promise<Task> {
    const arn = `arn:aws:ecs:r:1:task/c/t${++this.serial}`;
    this.tokens.push(options.clientToken);
    this.tasks.set(arn, {
      taskArn: arn,
      lastStatus: "RUNNING",
      desiredStatus: "RUNNING",
      startedAt: new Date(this.clock.now()),
      tags: options.tags,
      attachments: [{
        type: "ElasticNetworkInterface",
        details: [{ name: "privateIPv4Address", value: `127.0.0.${this.serial}` }],
      }],
    });
    this.started.push(arn);
    return Promise.resolve(this.tasks.get(arn)!);
  }
  register(): Promise<string> {
    return Promise.resolve("arn:aws:ecs:r:1:task-definition/vk_ns_p:1");
  }
  deregister(arn: string): Promise<void> {
    this.deregistered.push(arn);
    return Promise.resolve();
  }
  ensureLogGroup(): Promise<void> {
    return Promise.resolve();
  }
  /** The task stops as ECS stops a task whose essential container exited with `exitCode`. */
  exit(arn: string, exitCode: number, name = "main"): void {
    this.tasks.set(arn, {
      ...this.tasks.get(arn),
      lastStatus: "STOPPED",
      desiredStatus: "STOPPED",
      stoppedReason: "Essential container in task exited",
      stoppedAt: new Date(this.clock.now()),
      containers: [{ name, exitCode }],
    });
  }
  /** The current task of the pod: the last started. */
  get current(): string {
    return this.started.at(-1)!;
  }
}

/** A pod of one container `main`. */
export function ecsPod(restartPolicy: "Always" | "OnFailure" | "Never" = "Always"): Pod {
  return {
    metadata: { namespace: "ns", name: "p", uid: "0d7b4a2e-0000-4000-8000-0000000000f1" },
    spec: { restartPolicy, containers: [{ name: "main", image: "img" }] },
  };
}

/** RemotePods on the fargate backend on a {@link FakeEcs}, as the provider wires them. */
export function fakeFargate(clock = new FakeClock()) {
  const ecs = new FakeEcs(clock);
  const events: string[] = [];
  const stop = new AbortController();
  const backend = new FargateBackend({
    ecs,
    secrets: { put: () => Promise.resolve("arn:secret"), remove: () => Promise.resolve() },
    config,
    nodeName: "n1",
    clock,
    event: (_pod, type, reason, message) => events.push(`${type} ${reason}: ${message}`),
    signal: stop.signal,
  });
  const pods = new RemotePods<Task>({
    backend,
    clock,
    log: getLogger(["test"]),
    intervalMs: 1_000,
    hostIP: "127.0.0.1",
    retryList: true,
    keepPodIP: true,
  });
  const status = async () => (await pods.getPod("ns", "p"))!.status!;
  return { clock, ecs, events, backend, pods, status, stop };
}
