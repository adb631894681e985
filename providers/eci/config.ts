/**
 * The eci provider's config file (`--provider-config`, YAML or JSON), validated with zod; every
 * problem is reported at once, each naming its field.
 *
 * ```yaml
 * regionId: cn-hangzhou
 * vSwitchId: vsw-bp1xxxxxxxxxxxxxxxxxx     # one or more, comma-separated (ECI's multi-zone form)
 * securityGroupId: sg-bp1xxxxxxxxxxxxxxxxx
 * zoneId: cn-hangzhou-h                    # optional
 * clusterDNS: [172.21.0.10]               # optional: ClusterFirst pods resolve through it
 * clusterDomain: cluster.local
 * resourceGroupId: rg-xxxxxxxx             # optional
 * capacity: { cpu: "100", memory: 400Gi, pods: "200" }
 * tags: { team: platform }                 # added to every container group
 * statusInterval: 5s                       # how often DescribeContainerGroups polls
 * logMirrorRequestsPerSecond: 2            # --pod-log-dir: DescribeContainerLog calls/s, node-wide
 * endpoint: http://127.0.0.1:8080          # optional: another ECI endpoint (tests)
 * ```
 * @module
 */
import { z } from "zod";
import {
  durationField,
  type ParsedConfig,
  parseProviderConfig,
  positiveQuantityField,
} from "../../provider/mod.ts";

const tagKey = z.string().min(1).max(128).refine(
  (k) => !/^(aliyun|acs:)/i.test(k) && !k.startsWith("vkubelet.io/"),
  { error: "tag keys starting with aliyun, acs: or vkubelet.io/ are reserved" },
);

/** The eci provider's config schema. */
export const eciConfigSchema = z.strictObject({
  regionId: z.string({ error: "is required: the Alibaba Cloud region, e.g. cn-hangzhou" })
    .regex(/^[a-z]{2}(-[a-z0-9]+)+$/, { error: "is not a region ID such as cn-hangzhou" }),
  endpoint: z.url({ error: "must be a URL such as https://eci.cn-hangzhou.aliyuncs.com" })
    .optional(),
  vSwitchId: z.string({ error: "is required: the vSwitch(es) the groups' ENIs go in" })
    .regex(/^vsw-[0-9a-z]+(,vsw-[0-9a-z]+)*$/, {
      error: "must be vSwitch IDs (vsw-...), comma-separated",
    }),
  securityGroupId: z.string({ error: "is required: the security group of the groups' ENIs" })
    .regex(/^sg-[0-9a-z]+$/, { error: "must be a security group ID (sg-...)" }),
  zoneId: z.string().regex(/^[a-z]{2}(-[a-z0-9]+)+$/, {
    error: "is not a zone ID such as cn-hangzhou-h",
  }).optional(),
  resourceGroupId: z.string().min(1).optional(),
  clusterDNS: z.array(z.union([z.ipv4(), z.ipv6()], {
    error: "must be IP addresses of the cluster's DNS Service, such as 172.21.0.10",
  })).max(3, { error: "at most 3 nameservers (the kubelet's limit)" }).default([]),
  clusterDomain: z.string().regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    {
      error: "is not a DNS domain such as cluster.local",
    },
  ).default("cluster.local"),
  capacity: z.strictObject({
    cpu: positiveQuantityField("100"),
    memory: positiveQuantityField("400Gi"),
    pods: positiveQuantityField("200"),
  }).default({ cpu: "100", memory: "400Gi", pods: "200" }),
  tags: z.record(tagKey, z.string().max(128)).refine((t) => Object.keys(t).length <= 15, {
    error: "at most 15 tags (ECI allows 20 and vkubelet uses 5)",
  }).default({}),
  statusInterval: durationField("5s", 200),
  /**
   * The node's log mirror (--pod-log-dir) polls its containers in turn with at most this many
   * DescribeContainerLog calls a second (ECI allows 500 a minute per account).
   */
  logMirrorRequestsPerSecond: z.number({ error: "must be a number of calls per second" })
    .positive({ error: "must be above zero" }).default(2),
});

/** The validated config; `statusInterval` in milliseconds. */
export type EciConfig = z.output<typeof eciConfigSchema>;

/** Validates a parsed config file; returns every problem, each with its field. */
export function parseEciConfig(input: unknown): ParsedConfig<EciConfig> {
  return parseProviderConfig(eciConfigSchema, input, {
    provider: "eci",
    required: "naming at least regionId, vSwitchId and securityGroupId",
  });
}
