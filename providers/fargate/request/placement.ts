/**
 * Where a pod's task runs: the CPU architecture (the task definition's `runtimePlatform`; Fargate
 * runs Linux tasks on X86_64 or ARM64/Graviton) and the capacity provider (RunTask's
 * `capacityProviderStrategy`: FARGATE, or FARGATE_SPOT, which AWS may interrupt with two
 * minutes' notice). The node config sets the default; a pod may choose otherwise with an
 * annotation.
 * @module
 */
import type { CapacityProviderStrategyItem, RuntimePlatform } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { InvalidInputError } from "../../../provider/mod.ts";
import type { FargateConfig } from "../config.ts";

/** The pod annotations that choose them. */
export const PLACEMENT_ANNOTATIONS = {
  cpuArchitecture: "fargate.vkubelet.io/cpu-architecture",
  capacityProvider: "fargate.vkubelet.io/capacity-provider",
} as const;

/** The CPU architectures Fargate runs. */
export const CPU_ARCHITECTURES = ["X86_64", "ARM64"] as const;
/** Fargate's capacity providers. */
export const CAPACITY_PROVIDERS = ["FARGATE", "FARGATE_SPOT"] as const;

function choice<T extends string>(pod: Pod, key: string, allowed: readonly T[], fallback: T): T {
  const value = pod.metadata?.annotations?.[key];
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new InvalidInputError(
    `metadata.annotations["${key}"]: ${JSON.stringify(value)} is not one of ${
      allowed.join(", ")
    }; set it to one of them or remove it`,
  );
}

/** The task definition's `runtimePlatform`: set for ARM64, left out for Fargate's X86_64 default. */
export function runtimePlatformOf(pod: Pod, config: FargateConfig): RuntimePlatform | undefined {
  const arch = choice(
    pod,
    PLACEMENT_ANNOTATIONS.cpuArchitecture,
    CPU_ARCHITECTURES,
    config.cpuArchitecture,
  );
  return arch === "X86_64" ? undefined : { cpuArchitecture: arch, operatingSystemFamily: "LINUX" };
}

/**
 * RunTask's capacity provider strategy for FARGATE_SPOT; undefined for plain FARGATE (RunTask's
 * `launchType: FARGATE`, as before). ECS takes one or the other, never both.
 */
export function capacityStrategyOf(
  pod: Pod,
  config: FargateConfig,
): CapacityProviderStrategyItem[] | undefined {
  const provider = choice(
    pod,
    PLACEMENT_ANNOTATIONS.capacityProvider,
    CAPACITY_PROVIDERS,
    config.capacityProvider,
  );
  return provider === "FARGATE" ? undefined : [{ capacityProvider: provider, weight: 1 }];
}
