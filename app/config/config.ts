/**
 * vkubelet's configuration: flags, environment and an optional YAML/JSON file (`--config`),
 * merged with the precedence flag > environment > file > default, and validated once by the zod
 * schema in `app/config/schema.ts`. Every problem is reported at once, each naming the field as
 * the user wrote it and saying how to fix it. The options themselves are listed once, in
 * `app/config/options.ts`, which also feeds {@link HELP_TEXT}.
 * @module
 */
import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";
import denoJson from "../../deno.json" with { type: "json" };
import { OPTIONS, type OptionSpec } from "./options.ts";
import { type Config, configSchema } from "./schema.ts";
import { closest, helpText } from "./help.ts";
import { translateCompatFlags } from "./compat.ts";

export type { Config };

/** vkubelet's version, from `deno.json`. */
export const VERSION: string = denoJson.version;

/** The text `--help` prints: every option with its environment variable, file key and default. */
export const HELP_TEXT: string = helpText(VERSION);

/** What {@link loadConfig} reads; tests inject all three. */
export interface LoadConfigOptions {
  /** Command-line arguments, without the program name. */
  args: string[];
  /** Environment variables; `Deno.env.toObject()` in `main.ts`. */
  env: Record<string, string | undefined>;
  /** Reads a text file (the `--config` file, and to check the files other options name). */
  readFile: (path: string) => Promise<string>;
}

/**
 * A valid config, or every problem found; either way the warnings about flags of virtual-kubelet
 * or the kubelet that were mapped or ignored (`app/config/compat.ts`).
 */
export type LoadConfigResult =
  | { ok: true; config: Config; warnings: string[] }
  | { ok: false; errors: string[]; warnings: string[] };

/** Where a value came from, to name it in messages the way the user wrote it. */
type Source =
  | { kind: "flag"; flag: string }
  | { kind: "env"; name: string }
  | { kind: "file"; path: string }
  | { kind: "default" };

/** Options `main.ts` handles before loading the config; accepted here so they are not unknown. */
const COMMAND_FLAGS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

const BY_FLAG = new Map<string, OptionSpec>(
  (OPTIONS as readonly OptionSpec[]).flatMap((o) =>
    [o.flag, ...(o.aliases ?? [])].map((f) => [f, o])
  ),
);

/** Reads flags, environment and config file, merges them and validates the result. */
export async function loadConfig(options: LoadConfigOptions): Promise<LoadConfigResult> {
  const errors: string[] = [];
  const { args, warnings } = translateCompatFlags(options.args);
  const flags = readFlags(args, errors);
  const env = readEnv(options.env, warnings);
  const configPath = flags.get("config")?.value ?? env.get("config")?.value;
  const file = typeof configPath === "string"
    ? await readConfigFile(configPath, options.readFile, errors)
    : new Map<string, Sourced>();
  const raw: Record<string, unknown> = {};
  const sources = new Map<string, Source>();
  for (const option of OPTIONS as readonly OptionSpec[]) {
    const chosen = flags.get(option.key) ?? env.get(option.key) ?? file.get(option.key);
    sources.set(option.key, chosen?.source ?? { kind: "default" });
    if (chosen) raw[option.key] = chosen.value;
  }
  dropKubeconfigFromEnv(raw, sources, warnings);
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const failed = new Set(parsed.error.issues.map((issue) => String(issue.path[0] ?? "")));
    const issues = [...parsed.error.issues, ...crossFieldIssues(raw, failed)];
    for (const issue of issues) {
      const key = String(issue.path[0] ?? "");
      errors.push(`${describe(key, sources.get(key))}: ${issue.message}`);
    }
  }
  errors.push(...await checkFiles(raw, sources, options.readFile));
  if (errors.length > 0 || !parsed.success) return { ok: false, errors, warnings };
  return { ok: true, config: parsed.data, warnings };
}

/**
 * With TLS bootstrap, `--kubeconfig` is where the node's kubeconfig is kept, as the kubelet reads
 * it (app/node_kubeconfig.ts), and is not taken from `$KUBECONFIG` (the kubelet does not read it
 * either): a shell's admin kubeconfig would run the node as the admin, or be overwritten.
 */
function dropKubeconfigFromEnv(
  raw: Record<string, unknown>,
  sources: Map<string, Source>,
  warnings: string[],
): void {
  const source = sources.get("kubeconfig");
  if (raw.bootstrapKubeconfig === undefined || source?.kind !== "env") return;
  // `KUBECONFIG=admin.conf vkubelet --bootstrap-kubeconfig=admin.conf` needs no warning.
  if (raw.kubeconfig !== raw.bootstrapKubeconfig) {
    warnings.push(
      `${
        describe("kubeconfig", source)
      } is ignored with --bootstrap-kubeconfig; pass --kubeconfig PATH to name where the node's kubeconfig is kept`,
    );
  }
  delete raw.kubeconfig;
  sources.set("kubeconfig", { kind: "default" });
}

/**
 * The cross-field rules only run once every field is valid; to still report them in the same
 * pass, validate again with the failed fields left at their defaults.
 */
function crossFieldIssues(raw: Record<string, unknown>, failed: Set<string>) {
  const rest = Object.fromEntries(Object.entries(raw).filter(([key]) => !failed.has(key)));
  // `provider` has no default; a stand-in lets the rest of the schema run (no rule reads it).
  rest.provider ??= "stand-in.ts";
  const again = configSchema.safeParse(rest);
  if (again.success) return [];
  return again.error.issues.filter((issue) => !failed.has(String(issue.path[0] ?? "")));
}

interface Sourced {
  value: unknown;
  source: Source;
}

/** Parses flags with node's `parseArgs`, collecting every unknown or malformed flag. */
function readFlags(args: string[], errors: string[]): Map<string, Sourced> {
  const parserOptions = Object.fromEntries([
    ...[...BY_FLAG].map((
      [flag, o],
    ) => [flag, { type: o.kind === "boolean" ? "boolean" : "string" }]),
    ...Object.entries(COMMAND_FLAGS),
  ]) as Parameters<typeof parseArgs>[0] extends infer P
    ? P extends { options?: infer O } ? O : never
    : never;
  // Not `strict`: with it parseArgs stops at the first bad flag, and every problem should be
  // reported at once. The same checks are made below on the tokens.
  const { tokens } = parseArgs({
    args: dropValuelessFlags(args, errors),
    options: parserOptions,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const out = new Map<string, Sourced>();
  const skipped = new Set<number>();
  for (const token of tokens ?? []) {
    if (token.kind === "positional" && skipped.has(token.index)) continue;
    if (token.kind === "positional") {
      errors.push(
        `unexpected argument ${JSON.stringify(token.value)}: options are written --name=value`,
      );
      continue;
    }
    if (token.kind !== "option" || token.name in COMMAND_FLAGS || token.name === "h") continue;
    const option = BY_FLAG.get(token.name);
    if (!option) {
      // An unknown `--flag value` would also report `value` as an unexpected argument.
      const next = tokens![tokens!.indexOf(token) + 1];
      if (!token.inlineValue && next?.kind === "positional" && next.index === token.index + 1) {
        skipped.add(next.index);
      }
      const hint = closest(token.name, [...BY_FLAG.keys()]);
      errors.push(
        `unknown flag ${token.rawName}${hint ? `; did you mean --${hint}?` : ""} (see --help)`,
      );
      continue;
    }
    const value = flagValue(option, token, errors);
    if (value === undefined) continue;
    const previous = out.get(option.key)?.value;
    const merged = option.kind === "list" ? [...(previous as string[] ?? []), value] : value;
    out.set(option.key, { value: merged, source: { kind: "flag", flag: token.rawName } });
  }
  return out;
}

/**
 * Removes `--flag` when a flag that takes a value is followed by another flag or nothing:
 * parseArgs would take the next flag as its value and lose it.
 */
function dropValuelessFlags(args: string[], errors: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") return [...out, ...args.slice(i)];
    const option = arg.startsWith("--") && !arg.includes("=")
      ? BY_FLAG.get(arg.slice(2))
      : undefined;
    const next = args[i + 1];
    if (option && option.kind !== "boolean" && (next === undefined || next.startsWith("--"))) {
      errors.push(`${arg} needs a value: write ${arg}=${option.value ?? "VALUE"}`);
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** The value of one flag occurrence, or `undefined` after recording why it has none. */
function flagValue(
  option: OptionSpec,
  token: { rawName: string; value?: string; inlineValue?: boolean },
  errors: string[],
): unknown {
  if (option.kind === "boolean") return token.inlineValue ? token.value : true;
  if (token.value === undefined || (!token.inlineValue && token.value.startsWith("--"))) {
    errors.push(
      `${token.rawName} needs a value: write ${token.rawName}=${option.value ?? "VALUE"}`,
    );
    return undefined;
  }
  return token.value;
}

/**
 * The options set in the environment; an empty variable counts as unset. Of two variables for
 * one option the first listed (vkubelet's more specific name) wins; a different value in the
 * other is a warning naming both.
 */
function readEnv(
  env: Record<string, string | undefined>,
  warnings: string[],
): Map<string, Sourced> {
  const out = new Map<string, Sourced>();
  warnings.push(...unknownEnv(env));
  for (const option of OPTIONS as readonly OptionSpec[]) {
    const [name, ...others] = option.env.filter((n) => env[n] !== undefined && env[n] !== "");
    if (!name) continue;
    out.set(option.key, { value: env[name], source: { kind: "env", name } });
    for (const other of others.filter((n) => env[n]!.trim() !== env[name]!.trim())) {
      warnings.push(
        `${other}=${env[other]} is ignored: ${name}=${
          env[name]
        } is also set and is the more specific`,
      );
    }
  }
  return out;
}

/** `VKUBELET_*` variables vkubelet reads that are not options. */
const OTHER_ENV = new Set(["VKUBELET_CALLER_DIR"]);

/**
 * A warning for each set `VKUBELET_*` variable that names no option, with a did-you-mean as for
 * flags and file keys. A warning, not an error: the environment is shared with other programs.
 */
function unknownEnv(env: Record<string, string | undefined>): string[] {
  const known = (OPTIONS as readonly OptionSpec[]).flatMap((o) => o.env);
  const names = new Set(known);
  return Object.keys(env).filter((name) =>
    name.startsWith("VKUBELET_") && env[name] !== undefined && !names.has(name) &&
    !OTHER_ENV.has(name)
  ).sort().map((name) => {
    const hint = closest(name, known.filter((n) => n.startsWith("VKUBELET_")));
    return `${name} is not an option and is ignored${
      hint ? `; did you mean ${hint}?` : ""
    } (see --help)`;
  });
}

/** Reads the `--config` file: a YAML or JSON mapping of option keys. */
async function readConfigFile(
  path: string,
  readFile: (path: string) => Promise<string>,
  errors: string[],
): Promise<Map<string, Sourced>> {
  const out = new Map<string, Sourced>();
  let document: unknown;
  try {
    document = parseYaml(await readFile(path)) ?? {};
  } catch (err) {
    const what = err instanceof Error && err.name.startsWith("YAML")
      ? "is not valid YAML or JSON"
      : "cannot be read";
    errors.push(`config file ${path} ${what}: ${err instanceof Error ? err.message : err}`);
    return out;
  }
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    errors.push(`config file ${path}: expected a mapping of option keys (e.g. nodeName: vk-1)`);
    return out;
  }
  const keys = (OPTIONS as readonly OptionSpec[]).map((o) => o.key);
  for (const [key, value] of Object.entries(document)) {
    if (!keys.includes(key) || key === "config") {
      const hint = closest(key, keys);
      errors.push(
        `config file ${path}: unknown key ${JSON.stringify(key)}${
          hint ? `; did you mean ${hint}?` : ""
        }`,
      );
    } else if (value !== null && value !== undefined) {
      out.set(key, { value, source: { kind: "file", path } });
    }
  }
  return out;
}

/** Names the field as the user set it: `--port`, `KUBELET_PORT`, `port in vk.yaml`. */
function describe(key: string, source: Source | undefined): string {
  const option = (OPTIONS as readonly OptionSpec[]).find((o) => o.key === key);
  if (!option) return key || "config";
  switch (source?.kind) {
    case "flag":
      return source.flag;
    case "env":
      return `${source.name} (environment)`;
    case "file":
      return `${key} in ${source.path}`;
    default:
      return `--${option.flag}`;
  }
}

const FILE_OPTIONS = [
  "providerConfig",
  "kubeconfig",
  "tlsCertFile",
  "tlsPrivateKeyFile",
  "clientCaFile",
];

/** Checks that the files named by options can be read, so a typo fails before any API call. */
async function checkFiles(
  raw: Record<string, unknown>,
  sources: Map<string, Source>,
  readFile: (path: string) => Promise<string>,
): Promise<string[]> {
  const errors: string[] = [];
  for (const key of FILE_OPTIONS) {
    // With TLS bootstrap the node's kubeconfig is written there once it has a certificate.
    if (key === "kubeconfig" && raw.bootstrapKubeconfig !== undefined) continue;
    const value = raw[key];
    if (typeof value !== "string" || value.trim() === "") continue;
    const source = sources.get(key);
    // $KUBECONFIG may be a list; kubectl skips missing entries, so only all-missing is an error.
    const paths = source?.kind === "env" && key === "kubeconfig"
      ? value.split(":").filter(Boolean)
      : [value];
    const failures: string[] = [];
    for (const path of paths) {
      try {
        await readFile(path);
      } catch (err) {
        failures.push(`${JSON.stringify(path)} (${err instanceof Error ? err.message : err})`);
      }
    }
    if (failures.length === paths.length) {
      errors.push(
        `${describe(key, source)}: cannot read ${
          failures.join(", ")
        }; check the path and its permissions`,
      );
    }
  }
  return errors;
}
