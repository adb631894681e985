import assert from "node:assert/strict";
import { z } from "zod";
import { parseProviderConfig } from "../../provider/mod.ts";

const schema = z.strictObject({
  region: z.string(),
  limits: z.object({ pods: z.number().int().positive() }).default({ pods: 10 }),
});

Deno.test("a provider config is checked with every problem named by its field", () => {
  const parsed = parseProviderConfig(schema, { limits: { pods: -1 }, regoin: "x" });
  assert.equal(parsed.ok, false);
  if (parsed.ok) return;
  assert.equal(parsed.errors.length, 3, parsed.errors.join("\n"));
  assert.ok(parsed.errors.some((e) => e.startsWith("region: ")), "the missing field is named");
  assert.ok(parsed.errors.some((e) => e.startsWith("limits.pods: ")), "the nested field is named");
  assert.ok(parsed.errors.some((e) => e.includes(": regoin")), "the unknown key is named");
});

Deno.test("a required provider config file says what it must name; an optional one defaults", () => {
  const missing = parseProviderConfig(schema, undefined, {
    provider: "demo",
    required: "naming at least region",
  });
  assert.deepEqual(missing, {
    ok: false,
    errors: [
      "(top level): the demo provider needs a config file (--provider-config) naming at least region",
    ],
  });
  const optional = parseProviderConfig(z.object({ a: z.number().default(1) }), undefined);
  assert.deepEqual(optional, { ok: true, config: { a: 1 } });
});
