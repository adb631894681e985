/**
 * A provider's own config file (`--provider-config`), checked with the provider's schema and
 * every problem reported at once, each naming its field — the way vkubelet reports its own
 * config. Works with any schema that has zod's `safeParse` shape.
 *
 * ```ts ignore
 * const parsed = parseProviderConfig(mySchema, config, { required: "naming at least region" });
 * if (!parsed.ok) throw new InvalidInputError(parsed.errors.join("; "));
 * ```
 * @module
 */

/** One problem as a schema reports it. */
export interface ConfigIssue {
  /** Where in the config: keys and indexes from the top. */
  path: readonly PropertyKey[];
  /** What is wrong. */
  message: string;
  /** The schema's code for the problem. */
  code?: string;
  /** Unknown keys, for `code: "unrecognized_keys"`. */
  keys?: readonly string[];
}

/** What {@link parseProviderConfig} needs of a schema (zod's `safeParse`). */
export interface ConfigSchema<T> {
  /** Validates `input`; every problem found is in `error.issues`. */
  safeParse(
    input: unknown,
  ): { success: true; data: T } | { success: false; error: { issues: readonly ConfigIssue[] } };
}

/** The config, or every problem as `field: what is wrong`. */
export type ParsedConfig<T> = { ok: true; config: T } | { ok: false; errors: string[] };

/** Options for {@link parseProviderConfig}. */
export interface ParseConfigOptions {
  /**
   * Set when a config file is required: what it must name, for the error without one
   * (e.g. "naming at least kubeconfig and namespace"). Without it a missing file is `{}`.
   */
  required?: string;
  /** The provider's name, for that error. */
  provider?: string;
}

/**
 * Each issue as `field: message`, `(top level)` for the file itself.
 *
 * @example Usage
 * ```ts
 * import { formatConfigIssues } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * assert.deepEqual(
 *   formatConfigIssues([{ path: ["region"], message: "expected a string" }]),
 *   ["region: expected a string"],
 * );
 * ```
 */
export function formatConfigIssues(issues: readonly ConfigIssue[]): string[] {
  return issues.map((issue) => {
    const path = issue.path.map(String).join(".") || "(top level)";
    const keys = issue.code === "unrecognized_keys" && issue.keys
      ? `: ${issue.keys.join(", ")}`
      : "";
    return `${path}: ${issue.message}${keys}`;
  });
}

/**
 * Checks `input` (the parsed file, `undefined` without one) against `schema`.
 *
 * @example Usage
 * ```ts
 * import { parseProviderConfig } from "@vkubelet/vkubelet/provider";
 * import assert from "node:assert/strict";
 * const schema = {
 *   safeParse: (input: unknown) =>
 *     typeof input === "object" && input !== null && "region" in input
 *       ? { success: true as const, data: input as { region: string } }
 *       : {
 *         success: false as const,
 *         error: { issues: [{ path: ["region"], message: "is required" }] },
 *       },
 * };
 * const parsed = parseProviderConfig(schema, { region: "eu-west-1" });
 * assert.ok(parsed.ok && parsed.config.region === "eu-west-1");
 * assert.deepEqual(parseProviderConfig(schema, {}), { ok: false, errors: ["region: is required"] });
 * ```
 */
export function parseProviderConfig<T>(
  schema: ConfigSchema<T>,
  input: unknown,
  options: ParseConfigOptions = {},
): ParsedConfig<T> {
  if (input === undefined && options.required) {
    const who = options.provider ? `the ${options.provider} provider` : "this provider";
    return {
      ok: false,
      errors: [`(top level): ${who} needs a config file (--provider-config) ${options.required}`],
    };
  }
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return { ok: true, config: parsed.data };
  return { ok: false, errors: formatConfigIssues(parsed.error.issues) };
}
