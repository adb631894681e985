/**
 * The kubernetes provider's config file (`--provider-config`, YAML or JSON), validated with zod;
 * every problem names its field.
 *
 * ```yaml
 * kubeconfig: /etc/vkubelet/cluster-b.kubeconfig   # required: how to reach cluster B
 * context: b                                       # optional: a context of that file
 * namespace: offload-from-a                        # B's namespace for forwarded pods
 * namespaces: one                   # or same: each pod in B's namespace named as its own in A
 * syncServices: false               # with namespaces: same, copy the pods' namespaces' Services
 * nodeSelector: { pool: spare }     # which of B's nodes count for capacity; also put on the pods
 * tolerations: [{ key: example.com/spare, operator: Exists }]   # added to every forwarded pod
 * serviceAccountToken: downstream   # or upstream: a token of A's service account, mounted in B
 * tokenExpirationSeconds: 3600      # upstream tokens' lifetime; renewed at 80 %
 * upstreamApiServer: https://a.example:6443   # upstream mode: A's apiserver as B's pods reach it
 * persistentVolumeClaims: { "team-a/data": data-in-b }   # PVCs of A mapped to claims in B,
 *                                   # or `copy`: each claim copied to B (./copies/claims.ts)
 * storageClassName: fast-b          # with copy: the copies' class in B (default: B's default)
 * upstreamProvisioner: downstream.vkubelet.io   # with copy: provision A's claims of classes
 *                                   # naming this provisioner (./copies/upstream_provisioner.ts)
 * pingTimeout: 5s
 * profile: cci                      # shape pods to Huawei CCI's rules (see ./cci/cci_profile.ts)
 * unschedulableTimeout: 5m   # a pod B cannot schedule this long is failed upstream, to be replaced
 * gateway: { image: <vkubelet image>, namespace: vkubelet-gateway }   # with --remote-pod-network
 *                                   # and namespaces: same: pods across a non-flat boundary
 *                                   # (./network/gateway_deployment.ts)
 * ```
 * @module
 */
import { z } from "zod";
import { durationField, type ParsedConfig, parseProviderConfig } from "../../provider/mod.ts";
import { PROFILES } from "./cci/cci_profile.ts";

const dnsLabel = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, {
  error: (i) =>
    `${
      JSON.stringify(i.input)
    } is not a namespace name (lower-case letters, digits and '-', at most 63)`,
});

const toleration = z.strictObject({
  key: z.string().optional(),
  operator: z.enum(["Exists", "Equal"]).optional(),
  value: z.string().optional(),
  effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]).optional(),
  tolerationSeconds: z.number().int().optional(),
});

const quantities = z.record(z.string(), z.string().or(z.number()).transform(String));

/** `gateway`: the agent vkubelet deploys in B to carry its pods' streams (./network/). */
const gatewaySchema = z.strictObject({
  image: z.string({
    error: "is required: the image of vkubelet whose agent runs as the gateway in B",
  }).min(1),
  namespace: dnsLabel.default("vkubelet-gateway"),
  resources: z.strictObject({
    requests: quantities.optional(),
    limits: quantities.optional(),
  }).optional(),
});

/** The kubernetes provider's config schema. */
export const kubernetesConfigSchema = z.strictObject({
  kubeconfig: z.string({ error: "is required: the path of a kubeconfig for cluster B" }).min(1),
  context: z.string().min(1).optional(),
  namespace: dnsLabel.optional(),
  namespaces: z.enum(["one", "same"]).default("one"),
  nodeSelector: z.record(z.string(), z.string()).default({}),
  tolerations: z.array(toleration).default([]),
  serviceAccountToken: z.enum(["downstream", "upstream"]).default("downstream"),
  tokenExpirationSeconds: z.number().int().min(600, {
    error: "must be at least 600 (the apiserver's minimum for TokenRequest)",
  }).default(3600),
  persistentVolumeClaims: z.literal("copy").or(
    z.record(
      z.string().regex(/^[^/]+\/[^/]+$/, { error: 'keys are "namespace/claim" of cluster A' }),
      z.string().min(1),
    ),
  ).default({}),
  storageClassName: z.string().min(1).optional(),
  upstreamProvisioner: z.string().regex(/^[a-zA-Z0-9][-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9]$/, {
    error: "must be a provisioner name usable as a CSI driver name, such as downstream.vkubelet.io",
  }).optional(),
  upstreamApiServer: z.url({
    protocol: /^https$/,
    error: "must be an https URL of cluster A's apiserver that B's pods can reach",
  }).optional(),
  pingTimeout: durationField("5s"),
  profile: z.enum(PROFILES).optional(),
  unschedulableTimeout: durationField("5m"),
  syncServices: z.boolean().default(false),
  gateway: gatewaySchema.optional(),
}).superRefine((config, ctx) => {
  if (config.gateway && config.namespaces !== "same") {
    ctx.addIssue({
      code: "custom",
      path: ["gateway"],
      message:
        "needs namespaces: same (a pod in B calls A's Services by the names they have in its own namespace, where the gateway's Services are reflected)",
    });
  }
  if (config.gateway && config.syncServices) {
    ctx.addIssue({
      code: "custom",
      path: ["syncServices"],
      message:
        "cannot be used with gateway: both write A's Services into B under their own names (syncServices selects B's pods, the gateway points them at A through itself); remove one",
    });
  }
  if (config.syncServices && config.namespaces !== "same") {
    ctx.addIssue({
      code: "custom",
      path: ["syncServices"],
      message: "needs namespaces: same (a Service keeps its name and namespace in B)",
    });
  }
  if (config.profile === "cci" && config.namespaces === "same") {
    ctx.addIssue({
      code: "custom",
      path: ["profile"],
      message:
        "cci needs namespaces: one (a namespace prepared for CCI's networking, checked before the first pod)",
    });
  }
  for (const field of ["storageClassName", "upstreamProvisioner"] as const) {
    if (config[field] !== undefined && config.persistentVolumeClaims !== "copy") {
      ctx.addIssue({
        code: "custom",
        path: [field],
        message: "needs persistentVolumeClaims: copy (it is about the claims copied to B)",
      });
    }
  }
  if (config.namespaces === "one" && !config.namespace) {
    ctx.addIssue({
      code: "custom",
      path: ["namespace"],
      message:
        "is required: B's namespace for all forwarded pods (or namespaces: same to keep A's namespace names in B)",
    });
  }
});

/** The validated config; `pingTimeout` and `unschedulableTimeout` in milliseconds. */
export type KubernetesConfig = z.output<typeof kubernetesConfigSchema>;

/** Validates a parsed config file; returns every problem, each with its field. */
export function parseKubernetesConfig(input: unknown): ParsedConfig<KubernetesConfig> {
  return parseProviderConfig(kubernetesConfigSchema, input, {
    provider: "kubernetes",
    required: "naming at least kubeconfig and namespace",
  });
}
