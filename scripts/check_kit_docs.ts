/**
 * `deno doc --lint provider/mod.ts`, as a gate for the public kit: every exported symbol and
 * member documented, every type of ours that a public signature uses exported. One kind of
 * problem is left out, a reference to a type of an npm package (`Pod` from kubernetes-types, a
 * zod schema's type): Deno 2.9 reports those as private types although a provider imports them
 * from the package itself (denoland/deno#27364). A reference is taken for one when no module
 * of this repository declares a type of that name.
 *
 *   deno run --allow-read --allow-run --allow-env scripts/check_kit_docs.ts
 * @module
 */
import { join, relative } from "node:path";

const root = new URL("../", import.meta.url).pathname;

/** Names of the types this repository declares (its own .ts files, not the cache). */
function ownTypeNames(dir: string, names = new Set<string>()): Set<string> {
  for (const entry of Deno.readDirSync(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) {
      if (!entry.name.startsWith(".") && entry.name !== "node_modules") ownTypeNames(path, names);
    } else if (entry.name.endsWith(".ts")) {
      const text = Deno.readTextFileSync(path);
      for (const m of text.matchAll(/^export (?:interface|type|class|enum) (\w+)/gm)) {
        names.add(m[1]);
      }
    }
  }
  return names;
}

/** The problems `deno doc --lint` reports, each as its text block. */
async function docLint(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", entry],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return text.split(/\n(?=error\[)/).map((block) => block.trim()).filter((b) =>
    b.startsWith("error[")
  );
}

const own = ownTypeNames(root);
const problems = (await docLint("provider/mod.ts")).filter((block) => {
  const ref = /^error\[private-type-ref\]: .* references private type '(\w+)'/.exec(block);
  return !ref || own.has(ref[1]);
});
for (const block of problems) console.error(block.replaceAll(root, "") + "\n");
if (problems.length > 0) {
  console.error(
    `${problems.length} documentation problems in the kit (provider/mod.ts); ` +
      `document what it exports, or export the type a public signature uses`,
  );
  Deno.exit(1);
}
console.log(`the kit's documentation is complete (${relative(root, join(root, "provider"))}/)`);
