import assert from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };
import { COMPILE_TARGETS, VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";
import { bundleArgs, compileArgs } from "../../scripts/compile.ts";
import { VKUBELET_PERMISSIONS as TEST_PERMISSIONS } from "../../tools/cluster/vkubelet.ts";

Deno.test("deno task start runs main.ts with exactly the shipped permissions", () => {
  assert.equal(
    denoJson.tasks.start.command,
    `VKUBELET_CALLER_DIR="$INIT_CWD" deno run ${VKUBELET_PERMISSIONS.join(" ")} main.ts`,
    "update the start task in deno.json from scripts/permissions.ts",
  );
});

Deno.test("the end-to-end tests run vkubelet with the shipped permissions", () => {
  assert.deepEqual(TEST_PERMISSIONS, [...VKUBELET_PERMISSIONS]);
});

Deno.test("deno compile gets the shipped permissions, no -A, for every target", () => {
  for (const target of COMPILE_TARGETS) {
    const args = compileArgs(target, `dist/vkubelet-${target}`);
    assert.equal(args[0], "compile");
    assert.ok(args.includes(`--target=${target}`));
    assert.ok(args.includes("--bundle"), "the binary embeds the graph the bundle test runs");
    assert.ok(!args.some((a) => a === "-A" || a === "--allow-all"));
    const granted = args.filter((a) => /^--(allow-|unstable|v8-flags)/.test(a));
    assert.deepEqual(granted, [...VKUBELET_PERMISSIONS]);
    assert.equal(args.at(-1), "main.ts");
  }
  assert.deepEqual([...COMPILE_TARGETS].sort(), [
    "aarch64-apple-darwin",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "x86_64-unknown-linux-gnu",
  ]);
  assert.ok(bundleArgs("out.js").includes("--platform=deno"));
});
