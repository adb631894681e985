/**
 * Finds dead exports: a declaration of product code that is exported but named nowhere else in
 * the tree (no other file, tests included, and no other line of its own file). Run by
 * `deno task ok`; prints each one and exits 1. Remove the declaration, or drop `export` if the
 * file uses it itself.
 * @module
 */
import { dirname, join, relative, resolve } from "node:path";
import { LAYERS } from "./check_layers.ts";

const DECLARATION =
  /^export (?:declare )?(?:async )?(?:function\*?|const|let|class|interface|type|enum|abstract class) ([A-Za-z_$][\w$]*)/gm;

/** One export nothing uses. */
export interface DeadExport {
  file: string;
  line: number;
  name: string;
}

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* tsFiles(path);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
  }
}

function mentions(text: string, name: string): number {
  const escaped = name.replace(/\$/g, "\\$");
  return text.match(new RegExp(`(?<![\\w$])${escaped}(?![\\w$])`, "g"))?.length ?? 0;
}

/** Exports of `sources`' product files that no file of `sources` names again. */
export function findDeadExports(sources: ReadonlyMap<string, string>): DeadExport[] {
  const products = new Set(Object.keys(LAYERS));
  const dead: DeadExport[] = [];
  for (const [file, text] of sources) {
    if (!products.has(file.split("/")[0])) continue;
    for (const match of text.matchAll(DECLARATION)) {
      const name = match[1];
      if (mentions(text, name) > 1) continue;
      let used = false;
      for (const [other, otherText] of sources) {
        if (other !== file && mentions(otherText, name) > 0) {
          used = true;
          break;
        }
      }
      if (!used) {
        dead.push({ file, line: text.slice(0, match.index).split("\n").length, name });
      }
    }
  }
  return dead;
}

if (import.meta.main) {
  const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
  const sources = new Map<string, string>();
  for await (const path of tsFiles(root)) {
    sources.set(relative(root, path), await Deno.readTextFile(path));
  }
  const dead = findDeadExports(sources);
  for (const d of dead) console.error(`${d.file}:${d.line}: ${d.name} is exported but never used`);
  if (dead.length > 0) {
    console.error(
      `${dead.length} dead export(s): remove them, or drop export if the file uses them`,
    );
    Deno.exit(1);
  }
  console.log("exports: every export is used");
}
