/**
 * Flags of virtual-kubelet and the kubelet that vkubelet has no option of the same name for, so
 * that a command line or unit file copied from them starts instead of exiting 2. Each flag either
 * maps to a vkubelet option (`--taint` to `--taint-key`, `-v=4` to `--log-level=debug`,
 * `--address` to `--listen-address`) or is ignored; both with a warning that names what replaces
 * it or why it is ignored. The flags are those of virtual-kubelet's CLI at v1.14.1
 * (virtual-kubelet/virtual-kubelet cmd/virtual-kubelet/internal/commands/root/flag.go and
 * cmd/virtual-kubelet/main.go; klog v2.140.0's flags under `--klog.`) and the kubelet's `-v` and
 * `--address` (kubernetes/kubernetes cmd/kubelet/app/options/options.go).
 * @module
 */

/** What to do with one foreign flag. */
export interface CompatFlag {
  /** Flag name without dashes. */
  flag: string;
  /** True if the flag takes no value (a Go bool flag: `--flag` or `--flag=false`). */
  boolean?: boolean;
  /** The vkubelet flag it becomes, and how its value is translated (unchanged by default). */
  mapsTo?: {
    flag: string;
    value?: (value: string) => string | undefined;
    /** Several vkubelet flags from one value (`--taint key=value:Effect`), instead of `value`. */
    split?: (value: string) => [flag: string, value: string][];
  };
  /** Why it is ignored, or what to use instead; the warning's text. */
  note: string;
  /** Only these values are foreign; others go to the vkubelet flag of the same name. */
  foreignValue?: (value: string | undefined) => boolean;
}

const NO_TRACE_NAMING =
  "ignored: vkubelet's traces are named by OpenTelemetry's variables; set OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES instead";
const NO_KLOG =
  "ignored: vkubelet does not log through klog; use --log-level and --log-format (logs go to stderr)";

/** The kubelet's klog verbosity as a log level: 0-3 info, 4 debug, 5 and above trace. */
export function verbosityLevel(value: string): string | undefined {
  if (!/^\s*\d+\s*$/.test(value)) return undefined;
  const n = Number(value);
  return n >= 5 ? "trace" : n >= 4 ? "debug" : "info";
}

const VERBOSITY = {
  flag: "log-level",
  value: verbosityLevel,
};

/** Every foreign flag vkubelet accepts, by name. */
export const COMPAT_FLAGS: readonly CompatFlag[] = [
  {
    flag: "namespace",
    note:
      "ignored: pods bound to this node are watched in every namespace (virtual-kubelet ignores it too since it was deprecated)",
  },
  {
    flag: "enable-node-lease",
    boolean: true,
    note: "ignored: the node Lease is always renewed; see --node-lease-duration-seconds",
  },
  {
    flag: "cluster-domain",
    note:
      "ignored: vkubelet does not write pods' DNS settings; a provider that needs the cluster domain takes it in --provider-config",
  },
  {
    flag: "taint",
    mapsTo: { flag: "taint-key", split: taintFlags },
    note: "is deprecated in virtual-kubelet; taken as",
  },
  {
    // virtual-kubelet's exporters (root/tracing_register_*.go) other than ours.
    flag: "trace-exporter",
    foreignValue: (v) => ["jaeger", "ocagent", "zpages"].includes(v?.trim().toLowerCase() ?? ""),
    note:
      "ignored: vkubelet sends traces over OTLP/HTTP only (Jaeger takes it on port 4318); use --trace-exporter otlp",
  },
  { flag: "trace-service-name", note: NO_TRACE_NAMING },
  { flag: "trace-tag", note: NO_TRACE_NAMING },
  { flag: "v", mapsTo: VERBOSITY, note: "(the kubelet's verbosity) is taken as --log-level" },
  { flag: "klog.v", mapsTo: VERBOSITY, note: "is taken as --log-level" },
  {
    flag: "address",
    mapsTo: { flag: "listen-address" },
    note: "(the kubelet's) is taken as --listen-address",
  },
];

/**
 * `--taint` as virtual-kubelet takes it (a key) and as the kubelet's `--register-with-taints`
 * writes one taint (`key=value:Effect` or `key:Effect`, kubernetes/kubernetes
 * pkg/util/taints/taints.go `parseTaint`): the vkubelet flags it sets. The parts are checked by
 * those flags, which name what is wrong.
 */
export function taintFlags(value: string): [flag: string, value: string][] {
  const colon = value.lastIndexOf(":");
  if (colon < 0) return [["taint-key", value]];
  const [keyValue, effect] = [value.slice(0, colon), value.slice(colon + 1)];
  const equals = keyValue.indexOf("=");
  const flags: [string, string][] = equals < 0
    ? [["taint-key", keyValue]]
    : [["taint-key", keyValue.slice(0, equals)], ["taint-value", keyValue.slice(equals + 1)]];
  return [...flags, ["taint-effect", effect]];
}

/** klog's flags (k8s.io/klog/v2 klog.go InitFlags) that take no value. */
const KLOG_BOOLEANS = new Set([
  "logtostderr",
  "alsologtostderr",
  "add_dir_header",
  "skip_headers",
  "one_output",
  "skip_log_headers",
  "legacy_stderr_threshold_behavior",
]);

/** The entry for `name`: listed, or any other `klog.*` flag (ignored). */
function compatFlag(name: string): CompatFlag | undefined {
  const listed = COMPAT_FLAGS.find((c) => c.flag === name);
  if (listed || !name.startsWith("klog.")) return listed;
  return { flag: name, boolean: KLOG_BOOLEANS.has(name.slice(5)), note: NO_KLOG };
}

/** Arguments with foreign flags translated or removed, and one warning per flag seen. */
export interface TranslatedArgs {
  args: string[];
  warnings: string[];
}

/**
 * Rewrites foreign flags in `args`: mapped ones to their vkubelet flag (unless that flag is also
 * given, which then wins), ignored ones dropped with their value. `-v=4`, `-v 4`, `--v=4` and
 * `-v4` are all the kubelet's verbosity.
 */
export function translateCompatFlags(args: string[]): TranslatedArgs {
  const out: string[] = [];
  const warnings: string[] = [];
  const given = new Set(
    args.filter((a) => a.startsWith("--")).map((a) => a.slice(2).split("=")[0]),
  );
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      out.push(...args.slice(i));
      break;
    }
    const match = /^-(v)(\d+)$/.exec(arg) ?? /^--?([A-Za-z][\w.-]*)(?:=(.*))?$/s.exec(arg);
    const entry = match ? compatFlag(match[1]) : undefined;
    // Single-dash forms are only the kubelet's `-v`; `-h` and the rest stay as they are.
    if (!match || !entry || (!arg.startsWith("--") && entry.flag !== "v")) {
      out.push(arg);
      continue;
    }
    const shown = arg.startsWith("--") ? `--${entry.flag}` : `-${entry.flag}`;
    let value = match[2];
    if (value === undefined && !entry.boolean) {
      const next = args[i + 1];
      if (next !== undefined && !next.startsWith("--")) {
        value = next;
        i++;
      }
    }
    if (entry.foreignValue && !entry.foreignValue(value)) {
      out.push(value === undefined ? `--${entry.flag}` : `--${entry.flag}=${value}`);
      continue;
    }
    if (!entry.mapsTo) {
      warnings.push(`${shown}${entry.foreignValue ? `=${value}` : ""} ${entry.note}`);
      continue;
    }
    const target = entry.mapsTo.flag;
    if (given.has(target)) {
      warnings.push(`${shown} is ignored: --${target} is also given and wins`);
      continue;
    }
    if (value === undefined) {
      // Let the vkubelet flag report the missing value in its own words.
      out.push(`--${target}`);
      continue;
    }
    if (entry.mapsTo.split) {
      // A flag also given on its own wins over its part of the value.
      const flags = entry.mapsTo.split(value).filter(([flag]) => !given.has(flag));
      const shownFlags = flags.map(([flag, v]) => `--${flag}=${v}`);
      warnings.push(`${shown}=${value} ${entry.note} ${shownFlags.join(" ")}`);
      out.push(...shownFlags);
      continue;
    }
    const translated = entry.mapsTo.value ? entry.mapsTo.value(value) : value;
    if (translated === undefined) {
      warnings.push(
        `${shown}=${value} is ignored: expected a whole number (0-3 info, 4 debug, 5+ trace)`,
      );
      continue;
    }
    warnings.push(`${shown}=${value} ${entry.note}=${translated}`);
    out.push(`--${target}=${translated}`);
  }
  return { args: out, warnings };
}
