/**
 * `deno task compile`: builds vkubelet as single binaries with `deno compile`, one per target,
 * with exactly the permissions in `scripts/permissions.ts` (never `-A`).
 *
 * ```sh
 * deno task compile                                   # every target into dist/
 * deno task compile --target=x86_64-unknown-linux-gnu # one target
 * deno task compile --out-dir=out --include=./my_provider.ts
 * deno task compile --js                              # dist/vkubelet.js only (deno bundle)
 * ```
 *
 * `deno compile` downloads the target's `denort` runtime on first use, so this needs a machine
 * that can reach Deno's download site (a release job); the same module graph is tested offline
 * through `deno bundle` (tests/ship/bundle_test.ts). `--bundle` makes the compiled binary embed
 * the esbuild bundle — the graph that test runs — instead of the whole node_modules tree.
 * @module
 */
import { parseArgs } from "node:util";
import { COMPILE_TARGETS, VKUBELET_PERMISSIONS } from "./permissions.ts";

const root = new URL("../", import.meta.url).pathname;

/** `deno` arguments that compile `main.ts` for `target` into `output`. */
export function compileArgs(target: string, output: string, include: string[] = []): string[] {
  return [
    "compile",
    "--frozen-lockfile",
    "--bundle",
    ...include.map((path) => `--include=${path}`),
    ...VKUBELET_PERMISSIONS,
    `--target=${target}`,
    `--output=${output}`,
    "main.ts",
  ];
}

/** `deno` arguments that bundle `main.ts` into one JavaScript file (run from the repo root). */
export function bundleArgs(output: string): string[] {
  return ["bundle", "--frozen-lockfile", "--platform=deno", `--output=${output}`, "main.ts"];
}

async function deno(args: string[]): Promise<boolean> {
  console.log(`$ deno ${args.join(" ")}`);
  const { success } = await new Deno.Command(Deno.execPath(), { args, cwd: root }).output();
  return success;
}

async function main(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      target: { type: "string", multiple: true },
      "out-dir": { type: "string", default: "dist" },
      include: { type: "string", multiple: true },
      js: { type: "boolean", default: false },
    },
  });
  const outDir = values["out-dir"];
  await Deno.mkdir(`${root}${outDir}`, { recursive: true });
  if (values.js) return await deno(bundleArgs(`${outDir}/vkubelet.js`)) ? 0 : 1;
  const targets = values.target ?? [...COMPILE_TARGETS];
  const unknown = targets.filter((t) => !COMPILE_TARGETS.includes(t));
  if (unknown.length) {
    console.error(`unknown target ${unknown.join(", ")}; use one of ${COMPILE_TARGETS.join(", ")}`);
    return 2;
  }
  const failed: string[] = [];
  for (const target of targets) {
    const ok = await deno(compileArgs(target, `${outDir}/vkubelet-${target}`, values.include));
    if (!ok) failed.push(target);
  }
  if (failed.length) {
    console.error(
      `deno compile failed for ${failed.join(", ")}; it downloads the denort runtime for each ` +
        "target, so run it where Deno's download site is reachable",
    );
    return 1;
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
