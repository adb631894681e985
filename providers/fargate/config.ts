/**
 * The fargate provider's config file (`--provider-config`, YAML or JSON), validated with zod;
 * every problem is reported at once, each naming its field.
 *
 * ```yaml
 * region: eu-west-1
 * cluster: vkubelet                       # an existing ECS cluster
 * subnets: [subnet-0123456789abcdef0]     # awsvpc subnets for the tasks (at least one)
 * securityGroups: [sg-0123456789abcdef0]
 * assignPublicIp: false                   # true to pull public images without a NAT gateway
 * executionRoleArn: arn:aws:iam::123456789012:role/ecsTaskExecutionRole
 * taskRoleArn: arn:aws:iam::123456789012:role/app   # optional: the default task role
 * allowedTaskRoles:                      # per namespace, the roles its ServiceAccounts may name
 *   billing: [arn:aws:iam::123456789012:role/billing-*]
 * platformVersion: LATEST
 * cpuArchitecture: X86_64                 # or ARM64; a pod's fargate.vkubelet.io/cpu-architecture wins
 * capacityProvider: FARGATE               # or FARGATE_SPOT; fargate.vkubelet.io/capacity-provider
 * logGroup: /vkubelet/pods                # created if missing
 * capacity: { cpu: "100", memory: 400Gi, pods: "200" }
 * tags: { team: platform }                # added to every task definition and task
 * statusInterval: 5s                      # how often DescribeTasks polls
 * filesImage: public.ecr.aws/docker/library/busybox:1.36   # writes ConfigMap/Secret volume files
 * metricsPeriod: 60                       # seconds: the CloudWatch period kubectl top reads
 * logMirror: batched                      # --pod-log-dir: FilterLogEvents in batches; follow, off
 * logMirrorInterval: 2s                   # a batched round's pause
 * logMirrorRequestsPerSecond: 1           # the mirror's FilterLogEvents rate (5/s per account)
 * endpoint: http://127.0.0.1:5000         # optional: another ECS/Logs endpoint (tests)
 * ```
 * @module
 */
import { z } from "zod";
import {
  durationField,
  type ParsedConfig,
  parseDuration,
  parseProviderConfig,
  positiveQuantityField,
} from "../../provider/mod.ts";
import { CAPACITY_PROVIDERS, CPU_ARCHITECTURES } from "./request/placement.ts";

const tagKey = z.string().min(1).max(128).refine((k) => !k.toLowerCase().startsWith("aws:"), {
  error: "tag keys starting with aws: are reserved by AWS",
});

const roleArn = z.string().regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/, {
  error: "is not an IAM role ARN",
});

/** A role ARN whose role path and name may hold `*`; the partition and account may not. */
const rolePattern = z.string().regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/, {
  error: "is not an IAM role ARN (a * may stand for any characters after role/)",
});

/** A namespace name (RFC 1123 label), or `*` for every namespace. */
const NAMESPACE_KEY = /^(\*|[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$/;

/** What a config with the old global allowlist is told. */
export const GLOBAL_ALLOWLIST_MIGRATION =
  "allowedTaskRoleArns was one list for every namespace, so whoever may edit a ServiceAccount in " +
  "any namespace could take any role in it; replace it with allowedTaskRoles, a map from " +
  "namespace to the role ARNs its ServiceAccounts may name (e.g. allowedTaskRoles: {billing: " +
  "[arn:aws:iam::123456789012:role/billing]}), or, to keep one list for every namespace " +
  'knowingly, put it under the namespace "*"';

/** The fargate provider's config schema. */
export const fargateConfigSchema = z.strictObject({
  region: z.string({ error: "is required: the AWS region of the ECS cluster, e.g. eu-west-1" })
    .regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, { error: "is not an AWS region name such as eu-west-1" }),
  endpoint: z.url({ error: "must be a URL such as http://127.0.0.1:5000" }).optional(),
  cluster: z.string().min(1).default("default"),
  subnets: z.array(
    z.string().regex(/^subnet-[0-9a-f]+$/, { error: "must be subnet IDs (subnet-...)" }),
    { error: "is required: the subnets the tasks' network interfaces go in" },
  ).min(1, { error: "needs at least one subnet" }),
  securityGroups: z.array(
    z.string().regex(/^sg-[0-9a-f]+$/, { error: "must be security group IDs (sg-...)" }),
  ).max(5, { error: "ECS allows at most 5 security groups" }).default([]),
  assignPublicIp: z.boolean().default(false),
  executionRoleArn: z.string({
    error: "is required: the task execution role that lets ECS write the awslogs log streams",
  }).regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/, { error: "is not an IAM role ARN" }),
  taskRoleArn: roleArn.optional(),
  allowedTaskRoles: z.record(z.string(), z.array(rolePattern)).default({}).superRefine(
    (roles, ctx) => {
      for (const key of Object.keys(roles).filter((k) => !NAMESPACE_KEY.test(k))) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: 'is not a namespace name (or "*" for every namespace)',
        });
      }
    },
  ),
  // The old global list, kept in the schema only to be refused with the way out.
  allowedTaskRoleArns: z.unknown().optional().superRefine((value, ctx) => {
    if (value !== undefined) ctx.addIssue(GLOBAL_ALLOWLIST_MIGRATION);
  }),
  platformVersion: z.string().min(1).default("LATEST"),
  cpuArchitecture: z.enum(CPU_ARCHITECTURES).default("X86_64"),
  capacityProvider: z.enum(CAPACITY_PROVIDERS).default("FARGATE"),
  logGroup: z.string().regex(/^[\w\-/.#]{1,512}$/, {
    error: "is not a CloudWatch Logs group name (letters, digits, _ - / . #)",
  }).default("/vkubelet/pods"),
  capacity: z.strictObject({
    cpu: positiveQuantityField("100"),
    memory: positiveQuantityField("400Gi"),
    pods: positiveQuantityField("200"),
  }).default({ cpu: "100", memory: "400Gi", pods: "200" }),
  tags: z.record(tagKey, z.string().max(256)).refine((t) => Object.keys(t).length <= 40, {
    error: "at most 40 tags (ECS allows 50 and vkubelet uses up to 10)",
  }).default({}),
  filesImage: z.string().min(1).default("public.ecr.aws/docker/library/busybox:1.36"),
  metricsPeriod: z.number().int().refine((s) => [1, 5, 10, 30].includes(s) || s % 60 === 0, {
    error: "must be 1, 5, 10, 30 or a multiple of 60 (seconds), as CloudWatch periods are",
  }).positive().default(60),
  /**
   * How the node's log mirror (--pod-log-dir) reads the containers' streams: `batched` (one
   * FilterLogEvents per log group and 100 streams a round), `follow` (each stream's own
   * GetLogEvents every second, as `kubectl logs -f`), `off` (not mirrored).
   */
  logMirror: z.enum(["batched", "follow", "off"], {
    error: "must be batched, follow or off",
  }).default("batched"),
  logMirrorInterval: durationField("2s", 200),
  logMirrorRequestsPerSecond: z.number({ error: "must be a number of requests per second" })
    .positive({ error: "must be above zero" }).default(1),
  statusInterval: z.string().default("5s").transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms < 200) {
      ctx.addIssue(`expected a duration of at least 200ms such as 5s, got ${JSON.stringify(text)}`);
      return z.NEVER;
    }
    return ms;
  }),
});

/** The validated config; `statusInterval` and `logMirrorInterval` in milliseconds. */
export type FargateConfig = z.output<typeof fargateConfigSchema>;

/** Validates a parsed config file; returns every problem, each with its field. */
export function parseFargateConfig(input: unknown): ParsedConfig<FargateConfig> {
  return parseProviderConfig(fargateConfigSchema, input, {
    provider: "fargate",
    required: "naming at least region, subnets and executionRoleArn",
  });
}
