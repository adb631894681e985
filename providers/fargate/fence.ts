/**
 * `--leader-elect`: the AWS clients refuse every call that changes something (RunTask,
 * StopTask, RegisterTaskDefinition, CreateLogGroup...) while this replica does not lead, before
 * the SDK signs or sends it; reads (Describe, List, Get, Filter) pass, so a standby stays warm.
 * @module
 */
import type { WriteFence } from "../../provider/mod.ts";
import type { AwsClients } from "./client/aws.ts";

/** Commands that only read. */
const READ = /^(Describe|List|Get|Filter)/;

/** Adds the fence to both clients' middleware; returns `aws`. */
export function fenceAwsClients(aws: AwsClients, fence: WriteFence | undefined): AwsClients {
  if (!fence) return aws;
  const options = { step: "initialize", name: "vkubeletLeaderFence" } as const;
  aws.ecs.middlewareStack.add((next, context) => (args) => {
    guard(fence, context.commandName);
    return next(args);
  }, options);
  aws.logs.middlewareStack.add((next, context) => (args) => {
    guard(fence, context.commandName);
    return next(args);
  }, options);
  return aws;
}

/** Throws the fence's error for a command that is not a read while the fence is closed. */
function guard(fence: WriteFence, command = "an AWS call"): void {
  if (!READ.test(command)) fence.check(`AWS ${command}`);
}
