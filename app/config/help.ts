/**
 * The `--help` text, built from the option table, and the "did you mean" hint for unknown
 * flags and config keys.
 * @module
 */
import { OPTIONS, type OptionSpec } from "./options.ts";

const GROUPS: OptionSpec["group"][] = ["General", "Node", "Pods", "Kubelet API", "Logging"];

/** The full help text for this version. */
export function helpText(version: string): string {
  const lines = [
    `vkubelet ${version}: a virtual kubelet. Registers a Node, runs the pods bound to it through a`,
    "provider and serves the kubelet API (logs, exec, attach, port-forward, stats, metrics).",
    "",
    "Usage: vkubelet --provider NAME|PATH [options]",
    "       vkubelet --help | --version",
    "",
    "Every option can also be set in the environment (env) or in the --config file (file key).",
    "Precedence: flag > environment > config file > default. Durations are Go-style: 500ms,",
    "10s, 1m30s, 2h. Booleans: --flag, --flag=true or --flag=false.",
  ];
  for (const group of GROUPS) {
    lines.push("", `${group}:`);
    for (const option of (OPTIONS as readonly OptionSpec[]).filter((o) => o.group === group)) {
      const names = [option.flag, ...(option.aliases ?? [])].map((f) => `--${f}`).join(", ");
      lines.push(`  ${names}${option.value ? ` ${option.value}` : ""}`);
      lines.push(`      ${option.help}`);
      const where = [`env ${option.env.join(", ")}`];
      if (option.key !== "config") where.push(`file ${option.key}`);
      lines.push(`      ${where.join("; ")}`);
      if (option.shownDefault) lines.push(`      default: ${option.shownDefault}`);
    }
  }
  lines.push(
    "",
    "Other:",
    "  -h, --help     Print this text and exit.",
    "  --version      Print the version and exit.",
    "",
    "Flags of virtual-kubelet and the kubelet without a vkubelet option (--taint, -v, --address,",
    "--namespace, --klog.*, --trace-tag, ...) are mapped or ignored with a warning; see",
    "docs/migrating-from-virtual-kubelet.md.",
    "",
    "Exit codes: 0 after a clean shutdown (SIGINT/SIGTERM), 2 for a config error (nothing is",
    "written to the cluster), 1 for any other failure.",
    "",
  );
  return lines.join("\n");
}

/** The candidate nearest to `word` by edit distance, if it is near enough to be a typo. */
export function closest(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length];
}
