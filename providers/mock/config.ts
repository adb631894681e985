/**
 * The mock provider's config file (`--provider-config`, YAML or JSON), validated with zod; every
 * problem names its field. All fields are optional:
 *
 * ```yaml
 * capacity: { cpu: "100", memory: 1Ti, pods: "10000", ephemeral-storage: 1Ti, nvidia.com/gpu: "8" }
 * labels: { topology.kubernetes.io/zone: mock-a }
 * taints: [{ key: example.com/dedicated, value: demo, effect: NoSchedule }]
 * providerID: mock://vk-1
 * addresses: [{ type: InternalIP, address: 127.0.0.1 }]
 * podCIDR: 127.80.0.0/16          # must be inside 127.0.0.0/8
 * usage: { cpu: 10m, memory: 16Mi }       # per running container
 * nodeUsage: { cpu: 50m, memory: 128Mi }  # the node itself, on top of its pods
 * followInterval: 1s              # a new log line this often with `kubectl logs -f`
 * ```
 *
 * virtual-kubelet's mock format, keyed by node name (`{"vk-1": {"cpu": "2", "memory": "32Gi",
 * "pods": "128", "others": {...}, "providerID": "..."}}`, virtual-kubelet/virtual-kubelet
 * cmd/virtual-kubelet/internal/provider/mock/mock.go), is accepted too.
 * @module
 */
import { z } from "zod";
import { formatConfigIssues, parseDuration, quantityToNumber } from "../../provider/mod.ts";
import { parseLoopbackCidr } from "./cidr.ts";

const quantity = z.union([z.string(), z.number()], {
  error: (i) => `expected a quantity such as "2", "500m" or "4Gi", got ${JSON.stringify(i.input)}`,
}).refine((q) => quantityToNumber(q) !== undefined, {
  error: (i) => `${JSON.stringify(i.input)} is not a Kubernetes quantity (e.g. "2", "500m", "4Gi")`,
}).transform(String);

const positiveQuantity = quantity.refine((q) => quantityToNumber(q)! > 0, {
  error: "must be above zero (metrics-server drops pods and nodes with zero usage)",
});

const usage = z.strictObject({ cpu: positiveQuantity, memory: positiveQuantity });

const taint = z.strictObject({
  key: z.string().min(1),
  value: z.string().optional(),
  effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
});

const address = z.strictObject({
  type: z.enum(["InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS"]),
  address: z.string().min(1),
});

/** The mock's config schema. */
export const mockConfigSchema = z.strictObject({
  capacity: z.record(z.string(), quantity).default({}),
  labels: z.record(z.string(), z.string()).default({}),
  taints: z.array(taint).default([]),
  providerID: z.string().min(1).optional(),
  addresses: z.array(address).optional(),
  podCIDR: z.string().default("127.80.0.0/16").superRefine((text, ctx) => {
    const cidr = parseLoopbackCidr(text);
    if (typeof cidr === "string") ctx.addIssue(cidr);
  }),
  usage: usage.default({ cpu: "10m", memory: "16Mi" }),
  nodeUsage: usage.default({ cpu: "50m", memory: "128Mi" }),
  followInterval: z.string().default("1s").transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0) {
      ctx.addIssue(`expected a duration above zero such as 1s, got ${JSON.stringify(text)}`);
      return z.NEVER;
    }
    return ms;
  }),
});

/** The mock's validated config; `followInterval` in milliseconds. */
export type MockConfig = z.output<typeof mockConfigSchema>;

/** Capacity used for resources the config does not name. */
export const DEFAULT_CAPACITY: Readonly<Record<string, string>> = {
  cpu: "100",
  memory: "1Ti",
  pods: "10000",
  "ephemeral-storage": "1Ti",
};

/** Validates a parsed config file, with defaults filled in; returns every problem, each with its field. */
export function parseMockConfig(
  input: unknown,
  nodeName: string,
): { ok: true; config: MockConfig } | { ok: false; errors: string[] } {
  const parsed = mockConfigSchema.safeParse(fromVirtualKubeletFormat(input ?? {}, nodeName));
  if (parsed.success) {
    const capacity = { ...DEFAULT_CAPACITY, ...parsed.data.capacity };
    return { ok: true, config: { ...parsed.data, capacity } };
  }
  return { ok: false, errors: formatConfigIssues(parsed.error.issues) };
}

const VK_KEYS = new Set(["cpu", "memory", "pods", "others", "providerID"]);

/** Maps virtual-kubelet's `{nodeName: {cpu, memory, pods, others, providerID}}` to ours. */
function fromVirtualKubeletFormat(input: unknown, nodeName: string): unknown {
  if (!isObject(input) || !isObject(input[nodeName])) return input;
  const entry = input[nodeName];
  if (!Object.keys(entry).every((key) => VK_KEYS.has(key))) return input;
  const { others, providerID, ...basic } = entry;
  const extra = isObject(others) ? others : {};
  return { capacity: { ...basic, ...extra }, ...(providerID ? { providerID } : {}) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
