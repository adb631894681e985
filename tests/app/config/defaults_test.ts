import assert from "node:assert/strict";
import { OPTIONS } from "../../../app/config/options.ts";
import { configSchema } from "../../../app/config/schema.ts";
import { parseDuration } from "../../../base/duration.ts";

// Defaults the help describes rather than states: they depend on other options or on the host.
const DESCRIBED = new Set([
  "kubeconfig",
  "nodes",
  "nodeIp",
  "taintValue",
  "nodeLeaseRenewInterval",
  "certDir",
  "clientCaFile",
  "metricsAddr",
  "traceExporter",
]);

/** The value the help text's default stands for: its first word ("0 (no limit)" is 0). */
function shownValue(shown: string, actual: unknown): unknown {
  const word = shown.split(/[\s;(]/)[0];
  if (typeof actual === "boolean") return word === "true" ? true : word === "false" ? false : word;
  if (typeof actual === "number") {
    // Durations are shown as Go prints them (10s, 1m) and parsed to milliseconds.
    return /^\d+$/.test(word) ? Number(word) : parseDuration(word) ?? word;
  }
  return word;
}

Deno.test("the help text's defaults are the schema's: what --help promises is what runs", () => {
  const parsed = configSchema.parse({ provider: "mock" }) as Record<string, unknown>;
  const wrong: string[] = [];
  for (const option of OPTIONS) {
    if (option.key === "provider" || DESCRIBED.has(option.key)) continue;
    const value = parsed[option.key];
    // An empty map or list is no default (nodeLabels).
    const actual = value && typeof value === "object" && !Object.keys(value).length
      ? undefined
      : value;
    const shown = option.shownDefault;
    if (actual === undefined) {
      // No default in the schema: the help must not show one as if there were.
      if (shown !== undefined) wrong.push(`${option.key}: help shows ${shown}, schema has none`);
      continue;
    }
    if (shown === undefined || shownValue(shown, actual) !== actual) {
      wrong.push(`${option.key}: help shows ${shown ?? "nothing"}, schema has ${actual}`);
    }
  }
  assert.deepEqual(wrong, [], "fix the option's shownDefault in app/config_options.ts");
});

Deno.test("every option has a schema field and every schema field an option", () => {
  const fields = new Set(Object.keys(configSchema.in.shape));
  const keys = new Set(OPTIONS.map((o) => o.key));
  assert.deepEqual([...keys].filter((k) => !fields.has(k)), [], "options without a field");
  assert.deepEqual([...fields].filter((k) => !keys.has(k)), [], "fields without an option");
});
