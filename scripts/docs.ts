/**
 * `deno task docs`: rewrites the generated part of docs/configuration.md from the option table
 * (`app/config/options.ts`, the table `--help` and the config loader are built from), so the
 * reference cannot drift from the code; tests/ship/docs_test.ts fails while it differs.
 * @module
 */
import { OPTIONS, type OptionSpec } from "../app/config/options.ts";

/** Marks the generated part of docs/configuration.md; everything between them is replaced. */
export const BEGIN = "<!-- BEGIN GENERATED: configuration reference (deno task docs) -->";
export const END = "<!-- END GENERATED: configuration reference -->";

/** The page that holds the generated reference, from the repository root. */
export const REFERENCE_PAGE = "docs/configuration.md";

const GROUPS: OptionSpec["group"][] = ["General", "Node", "Pods", "Kubelet API", "Logging"];

const cell = (text: string) => text.replaceAll("|", "\\|");
const code = (text: string) => `\`${cell(text)}\``;

/** The generated Markdown, between (and including) the markers. */
export function configurationReference(): string {
  const lines = [
    BEGIN,
    "",
    "Every option is a flag, an environment variable and a key of the `--config` file (YAML or",
    "JSON). Precedence: flag > environment > config file > default. Durations are Go-style",
    "(`500ms`, `10s`, `1m30s`); booleans are `--flag`, `--flag=true` or `--flag=false`. Exit codes:",
    "0 after a clean shutdown, 2 for a configuration error (nothing is written to the cluster), 1",
    "otherwise. A plain number is not a duration (`10` is refused; write `10s` or `10ms`). Of two",
    "environment variables for one option the first listed wins, with a warning if the other differs.",
    "Flags of virtual-kubelet and the kubelet without an option here (`--taint`, `-v`, `--address`,",
    "`--namespace`, `--klog.*`, ...) are mapped or ignored with a warning; see",
    "[migrating-from-virtual-kubelet.md](migrating-from-virtual-kubelet.md).",
  ];
  for (const group of GROUPS) {
    lines.push("", `#### ${group}`, "");
    lines.push("| flag | environment | file key | default | meaning |");
    lines.push("| --- | --- | --- | --- | --- |");
    for (const option of (OPTIONS as readonly OptionSpec[]).filter((o) => o.group === group)) {
      const flags = [option.flag, ...(option.aliases ?? [])]
        .map((f) => code(`--${f}${option.value ? `=${option.value}` : ""}`))
        .join(", ");
      const env = option.env.map(code).join(", ");
      const key = option.key === "config" ? "" : code(option.key);
      lines.push(
        `| ${flags} | ${env} | ${key} | ${cell(option.shownDefault ?? "")} | ${
          cell(option.help)
        } |`,
      );
    }
  }
  lines.push("", END);
  return lines.join("\n");
}

/** The page's text with the generated section replaced; throws if the markers are missing. */
export function updateReference(page: string): string {
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) {
    throw new Error(`${REFERENCE_PAGE} has no ${BEGIN} ... ${END} section; add the two markers`);
  }
  return page.slice(0, start) + configurationReference() + page.slice(end + END.length);
}

/**
 * The page's text with the generated section replaced and formatted as `deno fmt` would (it
 * pads Markdown tables), so that `deno fmt --check` and the drift test agree.
 */
export async function renderReference(page: string): Promise<string> {
  const root = new URL("../", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "-"],
    cwd: root,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(updateReference(page)));
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error(`deno fmt failed: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

if (import.meta.main) {
  const path = new URL(`../${REFERENCE_PAGE}`, import.meta.url);
  const before = await Deno.readTextFile(path);
  const after = await renderReference(before);
  if (after !== before) await Deno.writeTextFile(path, after);
  console.log(after === before ? `${REFERENCE_PAGE} is up to date` : `${REFERENCE_PAGE} updated`);
}
