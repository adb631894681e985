/**
 * The fargate provider in this process against a fresh moto, without a control plane: for tests
 * that look at what the provider left in AWS (task definitions, secrets) after its calls.
 * @module
 */
import {
  DescribeTaskDefinitionCommand,
  ListTaskDefinitionsCommand,
  type TaskDefinition,
} from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { getLogger } from "../../../base/log.ts";
import type { ProviderDeps, ProviderKubeClient } from "../../../provider/mod.ts";
import { createProvider, type FargateProvider } from "../../../providers/fargate/mod.ts";
import { type Moto, MOTO_ENV, startMoto } from "./_moto.ts";

/** A provider on moto and what the tests ask of moto. */
export interface ProviderOnMoto {
  moto: Moto;
  provider: FargateProvider;
  /** The config the provider was built from. */
  config: Record<string, unknown>;
  /** The ARNs of the pod's task definitions in `status` (ACTIVE, INACTIVE). */
  definitionsOf(pod: Pod, status: "ACTIVE" | "INACTIVE"): Promise<string[]>;
  /** The pod's one ACTIVE task definition as ECS has it. */
  activeDefinition(pod: Pod): Promise<TaskDefinition>;
  close(): Promise<void>;
}

/** A pod for the provider, with a fresh uid. */
export function motoPod(name: string, spec: Partial<NonNullable<Pod["spec"]>> = {}): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "team-a", name, uid: crypto.randomUUID() },
    spec: { containers: [{ name: "main", image: "busybox" }], ...spec },
  };
}

/** Starts moto and a provider with the test config plus `extra`, and `kube` as its client. */
export async function startProviderOnMoto(
  extra: Record<string, unknown> = {},
  kube?: ProviderKubeClient,
): Promise<ProviderOnMoto> {
  const moto = await startMoto();
  for (const [k, v] of Object.entries(MOTO_ENV)) Deno.env.set(k, v);
  const config = {
    region: moto.region,
    endpoint: moto.endpoint,
    cluster: moto.cluster,
    subnets: [moto.subnet],
    securityGroups: [moto.securityGroup],
    executionRoleArn: "arn:aws:iam::123456789012:role/exec",
    logGroup: "/vkubelet/credentials",
    statusInterval: "300ms",
    ...extra,
  };
  const shutdown = new AbortController();
  const deps: ProviderDeps = {
    nodeName: `vk-creds-${crypto.randomUUID().slice(0, 6)}`,
    log: getLogger(["vkubelet", "provider"]),
    clock: realClock,
    internalIp: "127.0.0.1",
    daemonPort: 10250,
    signal: shutdown.signal,
    kube,
  };
  let provider: FargateProvider;
  try {
    provider = createProvider(config, deps);
  } catch (err) {
    await moto.stop();
    throw err;
  }
  const env: ProviderOnMoto = {
    moto,
    provider,
    config,
    async definitionsOf(pod, status) {
      const family = `vk_${pod.metadata?.namespace}_${pod.metadata?.name}`;
      const out = await moto.ecs.send(
        new ListTaskDefinitionsCommand({ familyPrefix: family, status }),
      );
      return out.taskDefinitionArns ?? [];
    },
    async activeDefinition(pod) {
      const [arn, ...more] = await env.definitionsOf(pod, "ACTIVE");
      if (!arn || more.length) {
        throw new Error(`expected one ACTIVE definition, got ${arn} ${more}`);
      }
      const out = await moto.ecs.send(new DescribeTaskDefinitionCommand({ taskDefinition: arn }));
      return out.taskDefinition!;
    },
    async close() {
      shutdown.abort();
      await provider.close();
      for (const k of Object.keys(MOTO_ENV)) Deno.env.delete(k);
      await moto.stop();
    },
  };
  return env;
}
