/**
 * The zun provider's config file (`--provider-config`, YAML or JSON), optional; every problem
 * is reported at once, each naming its field. Credentials are never in it: they come from
 * clouds.yaml and the `OS_*` variables (./credentials.ts).
 *
 * ```yaml
 * cloud: mycloud            # the clouds.yaml entry (default: OS_CLOUD, else the OS_* variables)
 * serviceType: container    # Zun's type in keystone's catalog
 * apiVersion: "1.40"        # a fixed container API microversion (default: the newest both speak)
 * statusInterval: 5s        # each capsule is read this often
 * requestTimeout: 30s       # each call to keystone or Zun
 * pingTimeout: 8s           # the node's health check (under the core's 10 s)
 * deleteTimeout: 3m         # how long a deletion waits for the capsule to be gone
 * exposePorts: true         # send containerPort entries (Zun opens them with security groups)
 * capacity: { cpu: "20", memory: 100Gi, pods: "100" }  # when neither hosts nor quotas say
 * ```
 * @module
 */
import { z } from "zod";
import { parseDuration, parseProviderConfig, quantityToNumber } from "../../provider/mod.ts";

const duration = (fallback: string, minMs: number) =>
  z.string().default(fallback).transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms < minMs) {
      ctx.addIssue(
        `expected a duration of at least ${minMs}ms such as ${fallback}, got ${
          JSON.stringify(text)
        }`,
      );
      return z.NEVER;
    }
    return ms;
  });

const quantity = (fallback: string) =>
  z.string().default(fallback).refine((q) => (quantityToNumber(q) ?? -1) > 0, {
    error: (i) => `${JSON.stringify(i.input)} is not a positive Kubernetes quantity such as 64Gi`,
  });

/** The zun provider's config schema. */
export const zunConfigSchema = z.strictObject({
  cloud: z.string().min(1).optional(),
  serviceType: z.string().min(1).default("container"),
  apiVersion: z.string().regex(/^1\.\d+$/, { error: "must be a microversion such as 1.40" })
    .optional(),
  statusInterval: duration("5s", 100),
  requestTimeout: duration("30s", 100),
  pingTimeout: duration("8s", 100),
  deleteTimeout: duration("3m", 1000),
  exposePorts: z.boolean().default(true),
  capacity: z.strictObject({
    cpu: quantity("20"),
    memory: quantity("100Gi"),
    pods: quantity("100"),
  }).default({ cpu: "20", memory: "100Gi", pods: "100" }),
});

/** The parsed config: durations in ms. */
export type ZunConfig = z.output<typeof zunConfigSchema>;

/** Parses the config file (undefined without one: all defaults). */
export function parseZunConfig(input: unknown) {
  return parseProviderConfig(zunConfigSchema, input ?? {});
}
