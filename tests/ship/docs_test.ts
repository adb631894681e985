import assert from "node:assert/strict";
import { configurationReference, REFERENCE_PAGE, renderReference } from "../../scripts/docs.ts";
import { OPTIONS } from "../../app/config/options.ts";

const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
const reference = await Deno.readTextFile(new URL(`../../${REFERENCE_PAGE}`, import.meta.url));

Deno.test("the configuration reference is what deno task docs generates", async () => {
  assert.equal(await renderReference(reference), reference, "run deno task docs and commit it");
});

Deno.test("the configuration reference lists every option by flag, env and file key", () => {
  const text = configurationReference();
  for (const option of OPTIONS) {
    assert.ok(text.includes(`\`--${option.flag}`), option.flag);
    for (const env of option.env) assert.ok(text.includes(`\`${env}\``), env);
    if (option.key !== "config") assert.ok(text.includes(`\`${option.key}\``), option.key);
  }
});

Deno.test("README keeps the quick start's two commands", () => {
  assert.match(readme, /npx -y deno@2\.9\.6 task demo\nnpx -y deno@2\.9\.6 task test\n/);
});
