/**
 * The AWS clients: the official SDK's ECS, CloudWatch Logs, Secrets Manager and CloudWatch clients with its default
 * credential chain (environment, shared config and profile, web identity for IRSA, the ECS task
 * role, instance metadata) and its standard retry mode, which backs off on throttling and
 * transient errors before any error reaches the provider. What still fails is sorted here into
 * the provider errors the core understands.
 * @module
 */
import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { ECSClient } from "@aws-sdk/client-ecs";
import { CloudWatchLogsClient } from "@aws-sdk/client-cloudwatch-logs";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { InvalidInputError, TransientError } from "../../../provider/mod.ts";
import type { FargateConfig } from "../config.ts";

/** The clients the provider uses. */
export interface AwsClients {
  ecs: ECSClient;
  logs: CloudWatchLogsClient;
  /** Secrets Manager, for the pods' Secret-sourced env values. */
  secrets: SecretsManagerClient;
  /** CloudWatch, for the tasks' Container Insights metrics (`kubectl top`, the HPA). */
  cloudwatch: CloudWatchClient;
}

/**
 * The SDK's user agent names the OS release, which Deno allows only with `--allow-sys=osRelease`;
 * vkubelet's permissions do not include it, so the agent names Deno's OS instead.
 */
const userAgent = () =>
  Promise.resolve([["vkubelet"], [`os/${Deno.build.os}`]] as [string, string?][]);

/** Builds the clients for `config` (region, optional endpoint). */
export function createAwsClients(config: FargateConfig): AwsClients {
  const common = {
    region: config.region,
    endpoint: config.endpoint,
    maxAttempts: 5,
    retryMode: "standard",
    defaultUserAgentProvider: userAgent,
  };
  return {
    ecs: new ECSClient(common),
    logs: new CloudWatchLogsClient(common),
    secrets: new SecretsManagerClient(common),
    cloudwatch: new CloudWatchClient(common),
  };
}

/** The AWS error code (`name`) of an SDK error, if it is one. */
export function awsErrorName(err: unknown): string | undefined {
  return err instanceof Error && "$metadata" in err ? err.name : undefined;
}

const PERMANENT = new Set([
  "InvalidParameterException",
  "ClientException",
  "ValidationException",
  "InvalidParameterValueException",
]);

/**
 * An SDK error as a provider error: a request ECS refuses as invalid becomes
 * {@link InvalidInputError} (the pod fails with the AWS message); everything else — throttling
 * past the SDK's retries, 5xx, network, missing permissions that an operator can fix — becomes
 * {@link TransientError}, retried by the core with back-off.
 */
export function awsError(what: string, err: unknown): Error {
  const name = awsErrorName(err) ?? (err instanceof Error ? err.name : "Error");
  const message = `${what}: ${name}: ${err instanceof Error ? err.message : String(err)}`;
  if (PERMANENT.has(name)) return new InvalidInputError(message, { cause: err });
  return new TransientError(message, { cause: err, retryAfterMs: 2000 });
}
