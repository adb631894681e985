/**
 * The process provider's config file (`--provider-config`, YAML or JSON), validated with zod;
 * every problem names its field. All fields are optional:
 *
 * ```yaml
 * stateDir: /var/lib/vkubelet/process   # pod directories, logs, volumes and state files;
 *                                      # default: $STATE_DIRECTORY/process, this, then
 *                                      # ~/.local/state/vkubelet/process (see state/state_dir.ts)
 * podIP: 127.0.0.1                       # default: the node's InternalIP
 * imageCommands:                         # images run without `command` use this argv
 *   nginx:1.27: [nginx, -g, "daemon off;"]
 * mountNamespace: auto                   # auto: each container in its own view (mount and PID
 *                                      # namespaces), pods refused where none can be made;
 *                                      # required: vkubelet does not start without; off: no
 *                                      # isolation at all, an explicit opt-in (README.md)
 * hiddenPaths: [/etc/vkubelet, /var/lib/vkubelet]   # covered by an empty tmpfs in every
 *                                      # container's mount namespace, as is the stateDir
 *                                      # (except the pod's own directory); put vkubelet's
 *                                      # config, kubeconfig and --cert-dir here
 * allowedIds:                            # the host uids and gids pods may name (runAsUser,
 *   uids: ["1000-65535"]                 # runAsGroup, supplementalGroups, fsGroup); default
 *   gids: ["1000-65535", "65534"]        # 1000-65535 for both. An id the host's /etc/passwd or
 *                                      # /etc/group names counts only when listed by itself,
 *                                      # as 65534 (nogroup) here. Others: the container waits
 *                                      # with CreateContainerConfigError. vkubelet's own uid
 *                                      # (what a pod naming none runs as) is not checked
 *                                      # (see launch/id_allowlist.ts)
 * hostPath: { enabled: false, allowedPrefixes: [/srv/data] }   # the prefixes also bound the
 *                                      # hostPath/local PersistentVolumes of claim volumes
 * cgroups: auto                          # auto | required | off (cgroup v2, or v1 memory/cpu/cpuacct)
 * cgroupRoot: /sys/fs/cgroup/vkubelet
 * logs: { maxSize: 10Mi, maxFiles: 3 }   # per container instance
 * volumeSyncInterval: 1m                 # ConfigMap/Secret re-read, as the kubelet's sync period
 * tokenExpirationSeconds: 3600           # projected service-account tokens
 * capacity: { cpu: "4", memory: 8Gi, pods: "110" }   # default: the host's CPUs and memory
 * labels: { example.com/pool: edge }
 * taints: [{ key: example.com/process, effect: NoSchedule }]
 * network:                               # pod networking by CNI (./network/pod_network.ts); absent:
 *                                      # pods share the host's network, as before
 *   cniConfDir: /etc/cni/net.d           # the kubelet's --cni-conf-dir: first .conflist/.conf/.json
 *   cniBinDir: [/opt/cni/bin]            # the kubelet's --cni-bin-dir (CNI_PATH)
 *   clusterDNS: [10.96.0.10]             # --cluster-dns; empty: ClusterFirst falls back to Default
 *   clusterDomain: cluster.local         # --cluster-domain (default "", as the kubelet's)
 *   resolvConf: /etc/resolv.conf         # --resolv-conf, the host DNS of dnsPolicy Default
 *   podCIDR: 10.244.1.0/24               # --pod-cidr: spec.podCIDR at registration, and the
 *                                      # CNI ipRanges while the Node has none
 *   hostNetns: /run/netns/host1          # run the plugins in this network namespace (tests)
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
import { MAX_ID, parseIdRange } from "./launch/id_allowlist.ts";

const quantity = z.union([z.string(), z.number()]).refine(
  (q) => quantityToNumber(q) !== undefined,
  { error: (i) => `${JSON.stringify(i.input)} is not a Kubernetes quantity (e.g. "2", "4Gi")` },
).transform(String);

const duration = (fallback: string) =>
  z.string().default(fallback).transform((text, ctx) => {
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0) {
      ctx.addIssue(`expected a duration above zero such as 1m, got ${JSON.stringify(text)}`);
      return z.NEVER;
    }
    return ms;
  });

const absolutePath = z.string().refine((p) => p.startsWith("/"), {
  error: "must be an absolute path",
});

const mode = z.enum(["auto", "required", "off"]);

/** A uid or gid, or a range of them: `1000`, `"1000"` or `"1000-65535"`. */
const idRange = z.union([z.string(), z.number()]).transform(String).refine(
  (text) => parseIdRange(text) !== undefined,
  {
    error: (i) =>
      `${
        JSON.stringify(i.input)
      } is not an id or a range of ids; write "1000" or "1000-65535" (from 0 to ${MAX_ID})`,
  },
);

const DEFAULT_ID_RANGES = ["1000-65535"];

const cidr = z.string().refine((text) => {
  const [ip, bits, ...rest] = text.split("/");
  const max = ip?.includes(":") ? 128 : 32;
  return rest.length === 0 && z.union([z.ipv4(), z.ipv6()]).safeParse(ip).success &&
    /^\d+$/.test(bits ?? "") && Number(bits) <= max;
}, { error: (i) => `${JSON.stringify(i.input)} is not a CIDR such as 10.244.1.0/24` });

const NETWORK_DEFAULTS = {
  cniConfDir: "/etc/cni/net.d",
  cniBinDir: ["/opt/cni/bin"],
  clusterDNS: [],
  clusterDomain: "",
  resolvConf: "/etc/resolv.conf",
};

/** The `network` section: CNI and DNS, as the kubelet's flags of the same names. */
const networkSchema = z.strictObject({
  cniConfDir: absolutePath.default(NETWORK_DEFAULTS.cniConfDir),
  cniBinDir: z.union([absolutePath.transform((p) => [p]), z.array(absolutePath).min(1)])
    .default(NETWORK_DEFAULTS.cniBinDir),
  clusterDNS: z.array(z.ipv4().or(z.ipv6())).default([]),
  clusterDomain: z.string().default(""),
  resolvConf: z.union([absolutePath, z.literal("")]).default(NETWORK_DEFAULTS.resolvConf),
  podCIDR: cidr.optional(),
  hostNetns: absolutePath.optional(),
  cniCacheDir: absolutePath.optional(),
});

/** The process provider's config schema. */
export const processConfigSchema = z.strictObject({
  stateDir: absolutePath.optional(),
  podIP: z.ipv4().or(z.ipv6()).optional(),
  imageCommands: z.record(z.string().min(1), z.array(z.string()).min(1)).default({}),
  mountNamespace: mode.default("auto"),
  hiddenPaths: z.array(absolutePath).default(["/etc/vkubelet", "/var/lib/vkubelet"]),
  allowedIds: z.strictObject({
    uids: z.array(idRange).default(DEFAULT_ID_RANGES),
    gids: z.array(idRange).default(DEFAULT_ID_RANGES),
  }).default({ uids: DEFAULT_ID_RANGES, gids: DEFAULT_ID_RANGES }),
  hostPath: z.strictObject({
    enabled: z.boolean().default(false),
    allowedPrefixes: z.array(absolutePath).default([]),
  }).default({ enabled: false, allowedPrefixes: [] }),
  cgroups: mode.default("auto"),
  cgroupRoot: absolutePath.default("/sys/fs/cgroup/vkubelet"),
  logs: z.strictObject({
    maxSize: quantity.default("10Mi"),
    maxFiles: z.number().int().min(1).default(3),
  }).default({ maxSize: "10Mi", maxFiles: 3 }),
  volumeSyncInterval: duration("1m"),
  tokenExpirationSeconds: z.number().int().min(600).default(3600),
  capacity: z.record(z.string(), quantity).default({}),
  labels: z.record(z.string(), z.string()).default({}),
  taints: z.array(z.strictObject({
    key: z.string().min(1),
    value: z.string().optional(),
    effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
  })).default([]),
  network: networkSchema.optional(),
});

/** The config as parsed: `stateDir` is chosen later (./state/state_dir.ts) when not given. */
export type ParsedProcessConfig = z.output<typeof processConfigSchema>;

/** The validated config with its state directory; durations in milliseconds. */
export type ProcessConfig = ParsedProcessConfig & { stateDir: string };

/** Validates a parsed config file with defaults filled in; returns every problem with its field. */
export function parseProcessConfig(input: unknown): ParsedConfig<ParsedProcessConfig> {
  return parseProviderConfig(processConfigSchema, input);
}

/** The config's log size cap in bytes. */
export function logMaxBytes(config: ProcessConfig): number {
  return Math.max(Math.round(quantityToNumber(config.logs.maxSize) ?? 0), 4096);
}
