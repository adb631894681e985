/**
 * The zod schema of vkubelet's config. Values arrive as strings (flags, environment) or as YAML
 * scalars (config file) and leave typed: durations in milliseconds, numbers, booleans, a label
 * map. Field rules live on the fields; rules between fields in the final `superRefine`. Every
 * message says what is wrong and what would be right; `app/config/config.ts` prefixes the field's name
 * as the user wrote it (flag, environment variable or file key).
 * @module
 */
import { isIP } from "node:net";
import { z } from "zod";
import { LOG_LEVELS, type LogLevel } from "../../base/log.ts";
import { formatDuration, parseDuration } from "../../base/duration.ts";
import { quantityToNumber } from "../../k8s/quantity.ts";
import { builtinProviderNames, isModuleReference, isRemoteModule } from "../provider_loader.ts";

const show = (value: unknown) => typeof value === "string" ? JSON.stringify(value) : String(value);

const DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);
const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** True for a Kubernetes DNS subdomain name (RFC 1123, at most 253 characters). */
export function isDnsSubdomain(name: string): boolean {
  return name.length <= 253 && DNS_SUBDOMAIN.test(name);
}

/** True for a DNS label (RFC 1123, at most 63 characters), e.g. a namespace name. */
export function isDnsLabel(name: string): boolean {
  return name.length <= 63 && new RegExp(`^${DNS_LABEL}$`).test(name);
}

/** True for a label or taint key: `[prefix/]name`, name at most 63 characters. */
export function isQualifiedName(key: string): boolean {
  const slash = key.lastIndexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  if (prefix !== undefined && !isDnsSubdomain(prefix)) return false;
  return name.length <= 63 && NAME_PART.test(name);
}

/** True for a label value: empty, or at most 63 alphanumerics with `-_.` inside. */
export function isLabelValue(value: string): boolean {
  return value === "" || (value.length <= 63 && NAME_PART.test(value));
}

/** True for an address on the loopback interface (127.0.0.0/8 or ::1). */
export function isLoopback(ip: string): boolean {
  return ip === "::1" || (isIP(ip) === 4 && ip.startsWith("127."));
}

/** A `HOST:PORT` split; `hostname` is `0.0.0.0` for `:PORT` and unbracketed for IPv6. */
export interface HostPort {
  hostname: string;
  port: number;
}

/** Parses `127.0.0.1:10255`, `:10255`, `[::1]:10255` or `localhost:10255`; undefined if not. */
export function parseHostPort(text: string): HostPort | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})$/.exec(text.trim());
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65535) return undefined;
  return { hostname: match[1] ?? (match[2] || "0.0.0.0"), port };
}

const integer = (min: number, max: number, fallback: number) =>
  z.preprocess(
    (v) => typeof v === "string" && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v,
    z.number({ error: (i) => `expected a whole number, got ${show(i.input)}` })
      .int({ error: (i) => `expected a whole number, got ${show(i.input)}` })
      .min(min, { error: (i) => `must be at least ${min}, got ${show(i.input)}` })
      .max(max, { error: (i) => `must be at most ${max}, got ${show(i.input)}` }),
  ).default(fallback);

/**
 * A Go-style duration. A plain number other than 0 is refused in a file as on the command line
 * (Go's `time.ParseDuration` wants a unit), rather than guessed to be milliseconds.
 */
const duration = () =>
  z.preprocess(
    (v) =>
      typeof v === "string"
        ? parseDuration(v) ?? v
        : typeof v === "number" && v !== 0
        ? String(v)
        : v,
    z.number({ error: (i) => durationError(i.input) }).min(0, { error: "must not be negative" }),
  );

function durationError(input: unknown): string {
  const text = String(input).trim();
  if (/^-?\d+(\.\d+)?$/.test(text)) {
    return `${text} has no unit: write ${text}s for seconds or ${text}ms for milliseconds`;
  }
  return `expected a duration such as 10s, 1m30s or 500ms, got ${show(input)}`;
}

const TRUE = new Set(["true", "1", "yes", "on"]);
const FALSE = new Set(["false", "0", "no", "off"]);
const booleanOrUnset = () =>
  z.preprocess(
    (v) => {
      if (typeof v !== "string") return v;
      const lower = v.trim().toLowerCase();
      return TRUE.has(lower) ? true : FALSE.has(lower) ? false : v;
    },
    z.boolean({ error: (i) => `expected true or false, got ${show(i.input)}` }).optional(),
  );
const boolean = (fallback: boolean) => booleanOrUnset().transform((v) => v ?? fallback);

/** An enum that accepts any letter case and gives back the canonical spelling. */
const oneOf = <T extends string>(values: readonly T[], fallback: T) =>
  z.preprocess(
    (v) =>
      typeof v === "string"
        ? values.find((x) => x.toLowerCase() === v.trim().toLowerCase()) ?? v
        : v,
    z.enum(values as [T, ...T[]], {
      error: (i) => `expected one of ${values.join(", ")}, got ${show(i.input)}`,
    }),
  ).default(fallback as never) as unknown as z.ZodType<T, unknown>;

const text = (what: string) =>
  z.string({ error: (i) => `expected ${what}, got ${show(i.input)}` })
    .trim()
    .min(1, { error: `must not be empty; give ${what}` });

const ip = () =>
  text("an IP address").refine((v) => isIP(v) !== 0, {
    error: (i) => `${show(i.input)} is not an IPv4 or IPv6 address`,
  });

/** `--trace-exporter`: only OTLP; virtual-kubelet's other exporters are named in the error. */
const traceExporter = () =>
  z.preprocess(
    (v) => typeof v === "string" ? v.trim().toLowerCase() : v,
    z.literal("otlp", {
      error: (i) =>
        `${show(i.input)} is not an exporter vkubelet has: it sends OTLP over HTTP ` +
        "(Jaeger, Tempo and the OpenTelemetry Collector take it); use --trace-exporter otlp",
    }),
  ).optional();

/**
 * `--trace-sample-rate` as virtual-kubelet reads it (cmd/virtual-kubelet/internal/commands/root/
 * tracing.go): `always` (100), `never` (0) or a whole percentage 0-100.
 */
const sampleRate = () =>
  z.preprocess(
    (v) => {
      const text = typeof v === "number" ? String(v) : typeof v === "string" ? v.trim() : v;
      if (typeof text !== "string") return text;
      const lower = text.toLowerCase();
      if (lower === "always") return 100;
      if (lower === "never") return 0;
      return /^\d{1,3}$/.test(text) && Number(text) <= 100 ? Number(text) : v;
    },
    z.number({
      error: (i) =>
        `expected always, never or a whole percentage from 0 to 100, got ${show(i.input)}`,
    }),
  );

const LEVEL_ALIASES: Record<string, LogLevel> = { warn: "warning", panic: "fatal" };

/** Turns `a=b,c=d`, a list of such strings, or a YAML map into one label map. */
function toLabelMap(v: unknown): unknown {
  const entries: [string, unknown][] = [];
  const pieces = typeof v === "string" ? [v] : Array.isArray(v) ? v : undefined;
  if (pieces === undefined) {
    if (v && typeof v === "object") entries.push(...Object.entries(v));
    else return v;
  } else {
    for (const piece of pieces.flatMap((p) => String(p).split(","))) {
      if (piece.trim() === "") continue;
      const eq = piece.indexOf("=");
      entries.push(
        eq < 0 ? [piece.trim(), undefined] : [
          piece.slice(0, eq).trim(),
          piece.slice(eq + 1).trim(),
        ],
      );
    }
  }
  return Object.fromEntries(
    entries.map((
      [k, value],
    ) => [k, typeof value === "number" || typeof value === "boolean" ? String(value) : value]),
  );
}

const labels = z.preprocess(
  toLabelMap,
  z.record(z.string(), z.unknown(), {
    error: (i) => `expected labels as key=value,key2=value2, got ${show(i.input)}`,
  }).superRefine((map, ctx) => {
    for (const [key, value] of Object.entries(map)) {
      if (!isQualifiedName(key)) {
        ctx.addIssue(
          `label key ${
            show(key)
          } is not valid: use [prefix/]name, name at most 63 letters, digits, '-', '_' or '.'`,
        );
      } else if (typeof value !== "string") {
        ctx.addIssue(`label ${key} needs a value: write ${key}=VALUE`);
      } else if (!isLabelValue(value)) {
        ctx.addIssue(
          `label ${key}=${
            show(value)
          } has an invalid value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
        );
      }
    }
  }).transform((map) => map as Record<string, string>),
).default({});

/** A taint the node registers with (`--register-with-taints`, the kubelet's format). */
export interface RegisterTaint {
  key: string;
  value?: string;
  effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
}

const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;

/** Parses `key[=value]:Effect` as the kubelet does (k8s.io/kubernetes pkg/util/taints). */
export function parseTaint(text: string): RegisterTaint | string {
  const colon = text.lastIndexOf(":");
  const effect = colon < 0 ? "" : text.slice(colon + 1).trim();
  const [key, value] = colon < 0 ? [text] : text.slice(0, colon).split("=", 2);
  const want = `write key[=value]:Effect, e.g. example.com/dedicated=gpu:NoSchedule`;
  if (!TAINT_EFFECTS.includes(effect as RegisterTaint["effect"])) {
    return `taint ${show(text)} needs an effect ${TAINT_EFFECTS.join(", ")}: ${want}`;
  }
  if (!isQualifiedName(key.trim())) return `taint key in ${show(text)} is not valid: ${want}`;
  if (value !== undefined && !isLabelValue(value.trim())) {
    return `taint value in ${show(text)} is not valid: at most 63 letters, digits, '-', '_' or '.'`;
  }
  return {
    key: key.trim(),
    ...(value !== undefined ? { value: value.trim() } : {}),
    effect: effect as RegisterTaint["effect"],
  };
}

const taints = z.preprocess(
  (v) =>
    typeof v === "string"
      ? v.split(",").map((t) => t.trim()).filter(Boolean)
      : Array.isArray(v)
      ? v.flatMap((t) => String(t).split(",")).map((t) => t.trim()).filter(Boolean)
      : v,
  z.array(z.string(), { error: (i) => `expected key[=value]:Effect,..., got ${show(i.input)}` })
    .superRefine((list, ctx) => {
      for (const text of list) {
        const parsed = parseTaint(text);
        if (typeof parsed === "string") ctx.addIssue(parsed);
      }
    })
    .transform((list) => list.map((t) => parseTaint(t) as RegisterTaint)),
).default([]);

const provider = text("a provider name or path").refine(
  (v) => isModuleReference(v) || builtinProviderNames().includes(v),
  {
    error: (i) =>
      `unknown provider ${show(i.input)}; use a built-in provider (${
        builtinProviderNames().join(", ")
      }) or the file path of a module that exports createProvider`,
  },
).refine((v) => !isRemoteModule(v), {
  // Neither `deno task start` nor the compiled binary grants import permission for other
  // hosts (scripts/permissions.ts): the code vkubelet runs stays on disk, reviewable, the same
  // in both, and does not depend on a server being up at start-up.
  error: (i) =>
    `${
      show(i.input)
    }: remote provider modules are not imported; download the module and give its path (or a file: URL)`,
});

/** One node of `nodes` (several nodes in one process; app/node_set.ts). */
const nodeEntry = z.strictObject({
  name: text("a node name").refine(isDnsSubdomain, {
    error: (i) =>
      `${
        show(i.input)
      } is not a valid node name: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit`,
  }),
  labels: labels,
  nodeIp: ip().optional(),
  providerConfig: text("a file path").optional(),
}, {
  error: (i) =>
    `expected a node name or {name, labels, nodeIp, providerConfig}, got ${show(i.input)}`,
});

/** `a,b`, a list of such strings, or (config file) a list of names and mappings. */
function toNodeEntries(v: unknown): unknown {
  const pieces = typeof v === "string" ? [v] : Array.isArray(v) ? v : undefined;
  if (pieces === undefined) return v;
  return pieces.flatMap((p) =>
    typeof p === "string"
      ? p.split(",").map((n) => n.trim()).filter(Boolean).map((name) => ({ name }))
      : [p]
  );
}

const nodes = z.preprocess(
  toNodeEntries,
  z.array(nodeEntry, { error: (i) => `expected a list of nodes, got ${show(i.input)}` }),
).default([]);

/**
 * The address a node of `nodes` gets when it names none: 127.1.0.2, 127.1.0.3, ... by position.
 * Each node needs its own, because the apiserver reaches a node's kubelet API at the node's
 * address and the one port is shared (docs/multinode.md).
 */
export function defaultNodeIp(index: number): string {
  return `127.1.${Math.floor(index / 250)}.${(index % 250) + 2}`;
}

/** Providers that cannot serve several nodes from one process, and why. */
const SINGLE_NODE_PROVIDERS: Record<string, string> = {
  process:
    "the process provider runs pods as local processes of one host and cannot serve several nodes; run one vkubelet per node",
  kubernetes:
    "the kubernetes provider does not serve several nodes yet; run one vkubelet per downstream cluster",
};

/** Field by field; the keys match `OPTIONS` in `app/config/options.ts`. */
const fields = z.object({
  config: text("a file path").optional(),
  provider: z.unknown().refine((v) => v !== undefined, {
    error: `is required: name a built-in provider (${
      builtinProviderNames().join(", ")
    }) or a module path`,
  }).pipe(provider),
  providerConfig: text("a file path").optional(),
  kubeconfig: text("a file path").optional(),
  bootstrapKubeconfig: text("a file path").optional(),
  rotateCertificates: booleanOrUnset(),
  kubeApiQps: integer(1, 100_000, 50),
  kubeApiBurst: integer(1, 1_000_000, 100),
  eventQps: integer(0, 100_000, 50),
  eventBurst: integer(1, 1_000_000, 100),
  startupTimeout: duration().default(0),
  nodeName: text("a node name").refine(isDnsSubdomain, {
    error: (i) =>
      `${
        show(i.input)
      } is not a valid node name: use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit`,
  }).default("vkubelet"),
  nodes,
  os: oneOf(["linux", "windows"] as const, "linux"),
  nodeIp: ip().optional(),
  nodeLabels: labels,
  disableTaint: boolean(false),
  registerWithTaints: taints,
  taintKey: text("a taint key").refine(isQualifiedName, {
    error: (i) =>
      `${
        show(i.input)
      } is not a valid taint key: use [prefix/]name, e.g. virtual-kubelet.io/provider`,
  }).default("virtual-kubelet.io/provider"),
  taintValue: z.string().refine(isLabelValue, {
    error: (i) =>
      `${show(i.input)} is not a valid taint value: at most 63 letters, digits, '-', '_' or '.'`,
  }).optional(),
  taintEffect: oneOf(["NoSchedule", "PreferNoSchedule", "NoExecute"] as const, "NoSchedule"),
  nodeLeaseDurationSeconds: integer(1, 3600, 40),
  nodeLeaseRenewInterval: duration().optional(),
  nodeStatusUpdateFrequency: duration().default(10_000),
  nodeStatusReportFrequency: duration().default(60_000),
  recreateNode: boolean(true),
  cordonOnShutdown: boolean(false),
  providerOutageGrace: duration().default(30 * 60_000),
  podSyncWorkers: integer(1, 1000, 10),
  fullResyncPeriod: duration().default(60_000),
  daemonSetPods: oneOf(["skip", "run"] as const, "skip"),
  listenAddress: ip().default("0.0.0.0"),
  port: integer(0, 65535, 10250),
  tlsCertFile: text("a file path").optional(),
  tlsPrivateKeyFile: text("a file path").optional(),
  tlsSelfSigned: boolean(false),
  rotateServerCertificates: booleanOrUnset(),
  certDir: text("a directory").optional(),
  clientCaFile: text("a file path").optional(),
  anonymousAuth: boolean(false),
  authorizationMode: oneOf(["Webhook", "AlwaysAllow"] as const, "Webhook"),
  streamIdleTimeout: duration().default(30_000),
  streamCreationTimeout: duration().default(30_000),
  metricsAddr: text("HOST:PORT").refine((v) => parseHostPort(v) !== undefined, {
    error: (i) =>
      `${
        show(i.input)
      } is not HOST:PORT, e.g. 127.0.0.1:10255, [::1]:10255 or :10255 (every interface)`,
  }).optional(),
  logLevel: z.preprocess(
    (v) =>
      typeof v === "string" ? LEVEL_ALIASES[v.trim().toLowerCase()] ?? v.trim().toLowerCase() : v,
    z.enum(LOG_LEVELS, {
      error: (i) => `expected one of ${LOG_LEVELS.join(", ")}, got ${show(i.input)}`,
    }),
  ).default("info"),
  logFormat: oneOf(["text", "json"] as const, "text"),
  podLogDir: text("a directory or none").optional(),
  remotePodNetwork: text("a file").optional(),
  containerLogMaxSize: z.union([z.string(), z.number()]).transform((v) => String(v).trim())
    .refine((v) => v === "-1" || (quantityToNumber(v) ?? -1) > 0, {
      error: (i) =>
        `${
          show(i.input)
        } is not a size: give a quantity such as 10Mi or 500Ki, or -1 for no rotation`,
    }).default("10Mi"),
  containerLogMaxFiles: integer(2, 1000, 5),
  podLogMaxStreams: integer(0, 100_000, 200),
  traceExporter: traceExporter(),
  traceSampleRate: sampleRate().default(100),
  // Leader election (issue 21). Defaults: a standby takes over 8-10 s after the leader's last
  // renewal, far inside the node Lease's 40 s and the node monitor's grace period (40-50 s),
  // so the node stays Ready while the writers change hands.
  nativeHeapTrim: boolean(true),
  leaderElect: boolean(false),
  leaderElectLeaseDuration: duration().default(8_000),
  leaderElectRenewDeadline: duration().default(6_000),
  leaderElectRetryPeriod: duration().default(1_000),
  leaderElectNamespace: text("a namespace").refine(isDnsLabel, {
    error: (i) =>
      `${show(i.input)} is not a valid namespace name: use a DNS label such as kube-node-lease`,
  }).default("kube-node-lease"),
});

/** The taint value used when none is given: the provider's name, made a valid label value. */
export function defaultTaintValue(provider: string): string {
  const segments = provider.replace(/[?#].*$/, "").split(/[\\/]/).filter(Boolean);
  let name = segments.at(-1) ?? provider;
  name = name.replace(/\.[a-z]+$/i, "");
  if (["mod", "main", "index"].includes(name) && segments.length > 1) name = segments.at(-2)!;
  const cleaned = name.replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
  return cleaned || "external";
}

/** The whole config: fields, then defaults that depend on other fields, then cross-field rules. */
export const configSchema = fields.transform((c) => ({
  ...c,
  // On by default with TLS bootstrap (issue 43): a bootstrapped node must renew its own.
  rotateCertificates: c.rotateCertificates ?? c.bootstrapKubeconfig !== undefined,
  // The serving certificate comes from a CSR unless files or self-signing are asked for.
  rotateServerCertificates: c.rotateServerCertificates ??
    (c.tlsCertFile === undefined && !c.tlsSelfSigned),
  taintValue: c.taintValue ?? defaultTaintValue(c.provider),
  nodeLeaseRenewInterval: c.nodeLeaseRenewInterval ?? c.nodeLeaseDurationSeconds * 250,
  nodes: c.nodes.map((n, i) => ({ ...n, nodeIp: n.nodeIp ?? defaultNodeIp(i) })),
})).superRefine((c, ctx) => {
  const at = (key: keyof typeof c, message: string) =>
    ctx.addIssue({ code: "custom", path: [key], message });
  if (c.tlsCertFile !== undefined && c.tlsPrivateKeyFile === undefined) {
    at(
      "tlsPrivateKeyFile",
      "is missing: a serving certificate needs its key; set it next to the certificate",
    );
  }
  if (c.tlsPrivateKeyFile !== undefined && c.tlsCertFile === undefined) {
    at("tlsCertFile", "is missing: a private key needs its certificate; set both or neither");
  }
  if (c.tlsSelfSigned && (c.tlsCertFile !== undefined || c.tlsPrivateKeyFile !== undefined)) {
    at(
      "tlsSelfSigned",
      "conflicts with a certificate file: choose files or a self-signed certificate",
    );
  }
  identityIssues(c).forEach(([key, message]) => at(key, message));
  const leaseMs = c.nodeLeaseDurationSeconds * 1000;
  if (c.nodeLeaseRenewInterval <= 0 || c.nodeLeaseRenewInterval >= leaseMs) {
    at(
      "nodeLeaseRenewInterval",
      `${
        formatDuration(c.nodeLeaseRenewInterval)
      } must be above 0 and shorter than the lease duration (${c.nodeLeaseDurationSeconds}s); use e.g. ${
        formatDuration(leaseMs / 4)
      } or raise the lease duration`,
    );
  }
  if (c.nodeStatusUpdateFrequency <= 0) {
    at("nodeStatusUpdateFrequency", "must be above 0, e.g. 10s");
  } else if (c.nodeStatusReportFrequency < c.nodeStatusUpdateFrequency) {
    at(
      "nodeStatusReportFrequency",
      `${
        formatDuration(c.nodeStatusReportFrequency)
      } is shorter than the status update frequency (${
        formatDuration(c.nodeStatusUpdateFrequency)
      }); use at least that`,
    );
  }
  if (c.streamCreationTimeout <= 0) at("streamCreationTimeout", "must be above 0, e.g. 30s");
  if (c.kubeApiBurst < c.kubeApiQps) {
    at(
      "kubeApiBurst",
      `${c.kubeApiBurst} is below the QPS (${c.kubeApiQps}); use at least the QPS`,
    );
  }
  if (c.eventQps > 0 && c.eventBurst < c.eventQps) {
    at("eventBurst", `${c.eventBurst} is below the event QPS (${c.eventQps}); use at least that`);
  }
  if (c.anonymousAuth && c.authorizationMode === "AlwaysAllow" && !isLoopback(c.listenAddress)) {
    at(
      "anonymousAuth",
      `with AlwaysAllow authorization lets anyone on the network exec into pods; use Webhook authorization or listen on 127.0.0.1 (now ${c.listenAddress})`,
    );
  }
  const metricsPort = c.metricsAddr === undefined ? undefined : parseHostPort(c.metricsAddr)?.port;
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === c.port) {
    at("metricsAddr", `uses the kubelet API's port ${c.port}; pick another port`);
  }
  if (c.nodes.length > 0) multiNodeIssues(c).forEach((message) => at("nodes", message));
  // Known before the provider is loaded, so that nothing is created under its state directory
  // for a replica that cannot run (the same refusal as app/leader_run.ts's, said earlier).
  if (c.leaderElect && c.provider === "process" && c.nodes.length === 0) {
    at(
      "leaderElect",
      "provider process cannot run as several replicas of one node (its pods are processes " +
        "of this host, so a second replica would start them again); run one replica without " +
        "--leader-elect",
    );
  }
  // Each replica would keep the remote pods' IPs (network namespaces, tunnel credentials) on its
  // own host: a failover would change a running pod's IP, which a kubelet never does.
  if (c.leaderElect && c.remotePodNetwork !== undefined) {
    at(
      "leaderElect",
      "cannot be combined with --remote-pod-network: each replica gives the remote pods IPs and " +
        "tunnels on its own host, so a failover would change running pods' IPs; run one " +
        "replica without --leader-elect",
    );
  }
  // Leader election: client-go's rules (tools/leaderelection NewLeaderElector).
  if (c.leaderElectLeaseDuration < 1_000 || c.leaderElectLeaseDuration % 1_000 !== 0) {
    at(
      "leaderElectLeaseDuration",
      "must be whole seconds, at least 1s (a Lease counts in seconds), e.g. 8s",
    );
  } else if (c.leaderElectRenewDeadline >= c.leaderElectLeaseDuration) {
    at(
      "leaderElectRenewDeadline",
      `${formatDuration(c.leaderElectRenewDeadline)} must be shorter than the lease duration (${
        formatDuration(c.leaderElectLeaseDuration)
      }), so a leader stops before a standby may take over`,
    );
  }
  if (
    c.leaderElectRetryPeriod <= 0 || c.leaderElectRenewDeadline <= c.leaderElectRetryPeriod * 1.2
  ) {
    at(
      "leaderElectRetryPeriod",
      `${formatDuration(c.leaderElectRetryPeriod)} must be above 0 and below the renew deadline (${
        formatDuration(c.leaderElectRenewDeadline)
      }) divided by 1.2, so that several renewals fit in it; e.g. 1s`,
    );
  }
});

/** The rules of node identity: bootstrap, rotation, where the serving certificate comes from. */
function identityIssues(c: {
  bootstrapKubeconfig?: string;
  rotateCertificates: boolean;
  rotateServerCertificates: boolean;
  tlsCertFile?: string;
  tlsSelfSigned: boolean;
  nodes: unknown[];
}): ["rotateServerCertificates" | "rotateCertificates" | "bootstrapKubeconfig", string][] {
  const issues: ReturnType<typeof identityIssues> = [];
  if (c.rotateServerCertificates && (c.tlsCertFile !== undefined || c.tlsSelfSigned)) {
    issues.push([
      "rotateServerCertificates",
      "conflicts with --tls-cert-file and --tls-self-signed: choose a CSR-issued certificate or the other source",
    ]);
  }
  if (!c.rotateServerCertificates && c.tlsCertFile === undefined && !c.tlsSelfSigned) {
    issues.push([
      "rotateServerCertificates",
      "is off but no other serving certificate is given: set --tls-cert-file (with its key) or --tls-self-signed, or leave it on",
    ]);
  }
  if (c.rotateCertificates && c.bootstrapKubeconfig === undefined) {
    issues.push([
      "rotateCertificates",
      "renews a certificate obtained by TLS bootstrap: set --bootstrap-kubeconfig too (a hand-made kubeconfig's certificate is renewed by whoever made it)",
    ]);
  }
  if (c.bootstrapKubeconfig !== undefined && c.nodes.length > 0) {
    issues.push([
      "bootstrapKubeconfig",
      "obtains one node's identity (system:node:<name>), which the Node authorizer lets act for that node only, and the nodes of one process share one client: with --nodes give --kubeconfig an identity that may act for every node, or run one vkubelet per node",
    ]);
  }
  return issues;
}

/** The rules for several nodes in one process (`nodes`). */
function multiNodeIssues(c: {
  nodes: { name: string; nodeIp: string }[];
  provider: string;
  listenAddress: string;
}): string[] {
  const issues: string[] = [];
  const seen = (values: string[]) => values.filter((v, i) => values.indexOf(v) !== i);
  const names = [...new Set(seen(c.nodes.map((n) => n.name)))];
  if (names.length) issues.push(`node ${names.join(", ")} is listed twice; give each node once`);
  const ips = [...new Set(seen(c.nodes.map((n) => n.nodeIp)))];
  if (ips.length) {
    issues.push(
      `nodeIp ${
        ips.join(", ")
      } is given to two nodes; each node needs its own address, because the apiserver reaches a node's kubelet API at that address`,
    );
  }
  const refusal = SINGLE_NODE_PROVIDERS[c.provider];
  if (refusal) issues.push(refusal);
  if (c.listenAddress !== "0.0.0.0") {
    issues.push(
      `leave --listen-address unset (now ${c.listenAddress}): with several nodes the kubelet API listens on each node's nodeIp`,
    );
  }
  return issues;
}

/** vkubelet's validated config. Durations are in milliseconds. */
export type Config = z.output<typeof configSchema>;
