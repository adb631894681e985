/**
 * The fargate provider (`--provider fargate`): the virtual node's pods run as AWS ECS tasks on
 * Fargate, through the official AWS SDK (credentials from its default chain). Config in
 * `./config.ts`, the pod → task definition mapping in `./request/task_definition.ts`, status in
 * `./status.ts`. Loaded only when chosen, so other providers do not pay for the SDK.
 * @module
 */
import { InvalidInputError, type ProviderDeps } from "../../provider/mod.ts";
import { createAwsClients } from "./client/aws.ts";
import { parseFargateConfig } from "./config.ts";
import { fenceAwsClients } from "./fence.ts";
import { FargateProvider } from "./provider.ts";

export { type FargateConfig, parseFargateConfig } from "./config.ts";
export { FargateProvider } from "./provider.ts";
export { taskDefinitionFor } from "./request/task_definition.ts";
export { taskSize } from "./request/sizing.ts";

/** Builds the provider from its parsed config file; every config problem at once. */
export function createProvider(config: unknown, deps: ProviderDeps): FargateProvider {
  const parsed = parseFargateConfig(config);
  if (!parsed.ok) {
    throw new InvalidInputError(`invalid fargate provider config: ${parsed.errors.join("; ")}`);
  }
  const aws = fenceAwsClients(createAwsClients(parsed.config), deps.fence);
  return new FargateProvider(parsed.config, deps, aws);
}
