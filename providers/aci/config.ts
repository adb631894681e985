/**
 * The aci provider's config file (`--provider-config`, YAML or JSON), validated with zod; every
 * problem is reported at once, each naming its field.
 *
 * ```yaml
 * subscriptionId: 00000000-0000-0000-0000-000000000000
 * resourceGroup: vk-pods                 # an existing resource group for the container groups
 * location: westeurope                   # where the groups run
 * osType: Linux
 * subnetIds:                             # optional: VNet placement (private IPs)
 *   - /subscriptions/.../resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/aci
 * clusterDNS: [10.0.0.10]                # ClusterFirst pods in the VNet resolve through it
 * clusterDomain: cluster.local
 * kubeProxy: { clusterCidr: 10.0.0.0/16, kubeconfig: /etc/vkubelet/kube-proxy.kubeconfig }
 * logAnalytics: { workspaceId: ..., workspaceKey: ..., logType: ContainerInstanceLogs }
 * capacity: { cpu: "100", memory: 400Gi, pods: "200" }   # checked against the location's quota
 * maxGroupCpu: 4                         # per-group limits; replaced by the location's capabilities
 * maxGroupMemoryGB: 16
 * tags: { team: platform }               # added to every container group
 * allowedIdentities:                     # per namespace, the managed identities its ServiceAccounts may name
 *   billing: [/subscriptions/.../resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/billing]
 * statusInterval: 5s                     # how often groups that can change are read
 * steadyStatusInterval: 60s              # how often groups whose containers all run (or ended) are
 * armReads: { perSecond: 20, burst: 100 } # vkubelet's share of ARM's reads (25/s per principal)
 * endpoint: https://management.azure.com # optional: another ARM endpoint (plain http: loopback only)
 * metricsInterval: 60s                   # how often a group's Azure Monitor figures are read again
 * mirrorLogs: false                      # true: logs to --pod-log-dir (an ARM read per container every 2 s)
 * monitorEndpoint: https://management.azure.com  # optional: where Azure Monitor's metrics are read
 * ```
 * @module
 */
import { z } from "zod";
import {
  type ParsedConfig,
  parseDuration,
  parseProviderConfig,
  quantityToNumber,
} from "../../provider/mod.ts";

const quantity = (fallback: string) =>
  z.string().default(fallback).refine((q) => (quantityToNumber(q) ?? -1) > 0, {
    error: (i) => `${JSON.stringify(i.input)} is not a positive Kubernetes quantity such as 64Gi`,
  });

/** ARM refuses these characters in tag names. */
const tagKey = z.string().min(1).max(512).regex(/^[^<>%&\\?/]+$/, {
  error: "tag names may not contain < > % & \\ ? /",
}).refine((k) => !k.startsWith("vkubelet-"), { error: "tag names vkubelet-* are vkubelet's own" });

const endpoint = z.url({ error: "must be a URL such as https://management.azure.com" }).refine(
  (u) => {
    const url = new URL(u);
    return url.protocol === "https:" ||
      (url.protocol === "http:" && /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(url.hostname));
  },
  { error: "must be https (plain http only to a loopback address, for tests)" },
);

/** A user-assigned identity's resource ID; `*` may stand for any characters after the resource group. */
const identityPattern = z.string().regex(
  /^\/subscriptions\/[^/*]+\/resourceGroups\/[^/*]+\/providers\/Microsoft\.ManagedIdentity\/userAssignedIdentities\/.+$/i,
  {
    error:
      "is not a user-assigned managed identity's resource ID (/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>; a * may stand for any characters after the resource group)",
  },
);

/** A namespace name (RFC 1123 label), or `*` for every namespace. */
const NAMESPACE_KEY = /^(\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$/;

/** The aci provider's config schema. */
export const aciConfigSchema = z.strictObject({
  subscriptionId: z.string({ error: "is required: the Azure subscription's ID (a GUID)" })
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, {
      error: "is not a subscription ID (a GUID such as 00000000-0000-0000-0000-000000000000)",
    }),
  resourceGroup: z.string({ error: "is required: the resource group the container groups go in" })
    .regex(/^[-\w.()]{1,89}[-\w()]$/, { error: "is not a resource group name" }),
  location: z.string({ error: "is required: the Azure region, e.g. westeurope" })
    .regex(/^[a-z0-9]+$/, { error: "is not an Azure location name such as westeurope" }),
  endpoint: endpoint.default("https://management.azure.com"),
  // Azure Monitor's metrics are ARM reads too; another endpoint only for tests (no spec to proxy).
  monitorEndpoint: endpoint.optional(),
  metricsInterval: z.string().default("60s").transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms < 1000) {
      ctx.addIssue(`expected a duration of at least 1s such as 60s, got ${JSON.stringify(text)}`);
      return z.NEVER;
    }
    return ms;
  }),
  osType: z.enum(["Linux", "Windows"]).default("Linux"),
  subnetIds: z.array(
    z.string().regex(
      /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Network\/virtualNetworks\/[^/]+\/subnets\/[^/]+$/i,
      {
        error: "must be subnet resource IDs (/subscriptions/.../virtualNetworks/NAME/subnets/NAME)",
      },
    ),
  ).default([]),
  clusterDNS: z.array(z.union([z.ipv4(), z.ipv6()], {
    error: "must be IP addresses of the cluster's DNS Service, such as 10.0.0.10",
  })).max(3, { error: "at most 3 nameservers (the kubelet's limit)" }).default([]),
  clusterDomain: z.string().regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    {
      error: "is not a DNS domain such as cluster.local",
    },
  ).default("cluster.local"),
  kubeProxy: z.strictObject({
    clusterCidr: z.union([z.cidrv4(), z.cidrv6()], {
      error: "must be the cluster's pod CIDR, such as 10.244.0.0/16",
    }),
    kubeconfig: z.string({ error: "is required: a kubeconfig file kube-proxy reads the API with" })
      .min(1),
    kubeVersion: z.string().regex(/^v\d+\.\d+\.\d+$/).default("v1.9.10"),
  }).optional(),
  logAnalytics: z.strictObject({
    workspaceId: z.string({ error: "is required: the Log Analytics workspace ID" }).min(1),
    workspaceKey: z.string({ error: "is required: the workspace's primary or secondary key" })
      .min(1),
    logType: z.enum(["ContainerInsights", "ContainerInstanceLogs"]).optional(),
    workspaceResourceId: z.string().optional(),
  }).optional(),
  capacity: z.strictObject({
    cpu: quantity("100"),
    memory: quantity("400Gi"),
    pods: quantity("200"),
  }).default({ cpu: "100", memory: "400Gi", pods: "200" }),
  maxGroupCpu: z.number().positive().default(4),
  maxGroupMemoryGB: z.number().positive().default(16),
  tags: z.record(tagKey, z.string().max(256)).refine((t) => Object.keys(t).length <= 40, {
    error: "at most 40 tags (ARM allows 50 and vkubelet uses 5)",
  }).default({}),
  allowedIdentities: z.record(z.string(), z.array(identityPattern)).default({}).superRefine(
    (ids, ctx) => {
      for (const key of Object.keys(ids).filter((k) => !NAMESPACE_KEY.test(k))) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: 'is not a namespace name (or "*" for every namespace)',
        });
      }
    },
  ),
  statusInterval: z.string().default("5s").transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms < 200) {
      ctx.addIssue(`expected a duration of at least 200ms such as 5s, got ${JSON.stringify(text)}`);
      return z.NEVER;
    }
    return ms;
  }),
  steadyStatusInterval: z.string().default("60s").transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms < 1000) {
      ctx.addIssue(`expected a duration of at least 1s such as 60s, got ${JSON.stringify(text)}`);
      return z.NEVER;
    }
    return ms;
  }),
  // Off by default: following a container's log is a Containers_ListLogs read every 2 s, and 200
  // followed logs ask ARM four times its read limit (see ./backend.ts).
  mirrorLogs: z.boolean().default(false),
  // ARM's token bucket for reads is 250, refilled at 25 a second (see ./client/read_budget.ts).
  armReads: z.strictObject({
    perSecond: z.number().positive().max(25, {
      error:
        "ARM refills 25 read tokens a second per subscription and principal; stay at or below it",
    }).default(20),
    burst: z.number().int().min(1).max(250, {
      error: "ARM's read bucket holds 250 tokens; stay at or below it",
    }).default(100),
  }).default({ perSecond: 20, burst: 100 }),
}).superRefine((c, ctx) => {
  // azure-aci adds the extension to Linux groups only (pkg/provider/aci.go): Windows has none.
  if (c.kubeProxy && c.osType === "Windows") {
    ctx.addIssue({
      code: "custom",
      path: ["kubeProxy"],
      message:
        "ACI's kube-proxy extension runs in Linux groups only; remove it or use osType Linux",
    });
  }
});

/** The validated config; `statusInterval` and `steadyStatusInterval` in milliseconds. */
export type AciConfig = z.output<typeof aciConfigSchema>;

/** Validates a parsed config file; returns every problem, each with its field. */
export function parseAciConfig(input: unknown): ParsedConfig<AciConfig> {
  return parseProviderConfig(aciConfigSchema, input, {
    provider: "aci",
    required: "naming at least subscriptionId, resourceGroup and location",
  });
}
