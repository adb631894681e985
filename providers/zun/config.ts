/**
 * The zun provider's config file (`--provider-config`, YAML or JSON), optional; every problem
 * is reported at once, each naming its field. Credentials are never in it: they come from
 * clouds.yaml and the `OS_*` variables (./credentials.ts).
 *
 * ```yaml
 * cloud: mycloud            # the clouds.yaml entry (default: OS_CLOUD, else the OS_* variables)
 * serviceType: container    # Zun's type in keystone's catalog
 * apiVersion: "1.40"        # a fixed container API microversion (default: the newest both speak)
 * statusInterval: 5s        # the capsules are read this often (one listing)
 * requestTimeout: 30s       # each call to keystone or Zun
 * pingTimeout: 8s           # the node's health check (under the core's 10 s)
 * deleteTimeout: 3m         # how long a deletion waits for the capsule to be gone
 * exposePorts: false        # send containerPort entries: Zun opens each to 0.0.0.0/0
 * secretEnv: env            # a Secret's value in the env: send it (env) or fail the pod (refuse)
 * capacity: { cpu: "20", memory: 100Gi, pods: "100" }  # when neither hosts nor quotas say
 * ```
 * @module
 */
import { z } from "zod";
import { durationField, parseProviderConfig, positiveQuantityField } from "../../provider/mod.ts";

/** The zun provider's config schema. */
export const zunConfigSchema = z.strictObject({
  cloud: z.string().min(1).optional(),
  serviceType: z.string().min(1).default("container"),
  apiVersion: z.string().regex(/^1\.\d+$/, { error: "must be a microversion such as 1.40" })
    .optional(),
  statusInterval: durationField("5s", 100),
  requestTimeout: durationField("30s", 100),
  pingTimeout: durationField("8s", 100),
  deleteTimeout: durationField("3m", 1000),
  // Zun opens every sent port to every address (zun/network/neutron.py `expose_ports`:
  // remote_ip_prefix 0.0.0.0/0) and its capsule API takes no range or security group to narrow
  // it, so ports are opened only when asked.
  exposePorts: z.boolean().default(false),
  // Zun stores a capsule's env in its database and shows it with the capsule
  // (zun/api/controllers/v1/views/containers_view.py `environment`).
  secretEnv: z.enum(["env", "refuse"], {
    error: "must be env (send a Secret's value in the env) or refuse (fail such a pod)",
  }).default("env"),
  capacity: z.strictObject({
    cpu: positiveQuantityField("20"),
    memory: positiveQuantityField("100Gi"),
    pods: positiveQuantityField("100"),
  }).default({ cpu: "20", memory: "100Gi", pods: "100" }),
});

/** The parsed config: durations in ms. */
export type ZunConfig = z.output<typeof zunConfigSchema>;

/** Parses the config file (undefined without one: all defaults). */
export function parseZunConfig(input: unknown) {
  return parseProviderConfig(zunConfigSchema, input ?? {});
}
