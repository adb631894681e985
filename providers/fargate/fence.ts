/**
 * `--leader-elect`: the AWS clients refuse every call that changes something (RunTask,
 * StopTask, RegisterTaskDefinition, CreateLogGroup...) while this replica does not lead, before
 * the SDK signs or sends it; reads (Describe, List, Get, Filter) pass, so a standby stays warm.
 * @module
 */
import type { ECSClient } from "@aws-sdk/client-ecs";
import type { WriteFence } from "../../provider/mod.ts";
import type { AwsClients } from "./client/aws.ts";

/** The part of each client's middleware stack the fence uses (the same for every client). */
type Stack = ECSClient["middlewareStack"];

/** Commands that only read. */
const READ = /^(Describe|List|Get|Filter)/;

/** Adds the fence to every client's middleware (Secrets Manager's writes too); returns `aws`. */
export function fenceAwsClients(aws: AwsClients, fence: WriteFence | undefined): AwsClients {
  if (!fence) return aws;
  const options = { step: "initialize", name: "vkubeletLeaderFence" } as const;
  for (const client of [aws.ecs, aws.logs, aws.secrets, aws.cloudwatch]) {
    (client.middlewareStack as Stack).add((next, context) => (args) => {
      guard(fence, context.commandName);
      return next(args);
    }, options);
  }
  return aws;
}

/** Throws the fence's error for a command that is not a read while the fence is closed. */
function guard(fence: WriteFence, command = "an AWS call"): void {
  if (!READ.test(command)) fence.check(`AWS ${command}`);
}
