/**
 * Keeps the tree's layers: every import of product code points to a layer below its own, or
 * stays inside its own top-level folder. Run by `deno task ok` (and so by CI); prints each
 * import that runs up or sideways and exits 1.
 *
 * The layers, lowest first (docs/development.md's Layout section shows the same):
 *
 * 1. `base/` — clock, log, durations; imports nothing of ours
 * 2. `k8s/`, `spdy/`, `x509/` — libraries: the Kubernetes client, the SPDY/3.1 codec, keys and
 *    certificates
 * 3. `provider/` — the provider contract and kit
 * 4. `core/` (node, pods, kubelet API) and `providers/` (built-in providers), side by side
 * 5. `app/` — config, start-up, the provider loader
 * 6. `main.ts` — the composition root
 *
 * Inside a layer, sibling folders stay apart: `core/pods`, `core/node` and `core/kubelet_api`
 * never import each other (they talk through callbacks `app/` wires; files directly in `core/`
 * are theirs to share), and no provider imports another. A built-in provider imports only the
 * kit, `provider/`, exactly what a provider outside this repository gets; the exceptions are
 * named in {@link PROVIDER_EXCEPTIONS}.
 *
 * Tests, scripts and the demo may import any layer; `bench/` any layer and `tools/`, but no test
 * file (what the bench shares with tests lives in `tools/`); `tools/` (the local control plane and
 * the harness that tests and the bench share) any product layer but never `tests/` or `bench/`;
 * `examples/` only the provider kit, as a provider outside this repository would.
 * @module
 */
import { dirname, join, relative, resolve } from "node:path";

/** A layer's rank; folders of equal rank may not import each other. */
export const LAYERS: Readonly<Record<string, number>> = {
  "base": 1,
  "k8s": 2,
  "spdy": 2,
  "x509": 2,
  "provider": 3,
  "core": 4,
  "providers": 4,
  "app": 5,
  "main.ts": 6,
};

/** Top-level folders whose subfolders may not import each other. */
const APART = new Set(["core", "providers"]);

/**
 * What a built-in provider (or one folder of it) may import besides the kit, and why. The
 * kubernetes provider drives a second cluster with the full client; only its `streaming/` relays
 * exec, attach and port-forward over SPDY to it.
 */
export const PROVIDER_EXCEPTIONS: Readonly<Record<string, readonly string[]>> = {
  "providers/kubernetes": ["k8s"],
  "providers/kubernetes/streaming": ["spdy"],
};

/** The exceptions that apply to `file`: those of every folder it is in. */
function exceptionsFor(file: string): string[] {
  return Object.entries(PROVIDER_EXCEPTIONS)
    .filter(([folder]) => file.startsWith(`${folder}/`))
    .flatMap(([, layers]) => layers);
}

/** One import that breaks the layering. */
export interface LayerViolation {
  file: string;
  line: number;
  target: string;
  why: string;
}

const IMPORT =
  /(?:^|\s)(?:import|export)\b[^"';]*?\bfrom\s*"(\.[^"]+)"|import\(\s*"(\.[^"]+)"\s*\)/g;

function topOf(path: string): string {
  return path.split("/")[0];
}

/** Checks one file's source; `file` and the returned targets are relative to the root. */
export function checkSource(file: string, source: string): LayerViolation[] {
  const from = topOf(file);
  const fromRank = LAYERS[from];
  const isExample = from === "examples";
  const isTool = from === "tools";
  const isBench = from === "bench";
  if (fromRank === undefined && !isExample && !isTool && !isBench) return [];
  const fromPart = file.split("/").slice(0, 2).join("/");
  const found: LayerViolation[] = [];
  for (const match of source.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2];
    const target = join(dirname(file), spec);
    const to = topOf(target);
    const line = source.slice(0, match.index).split("\n").length;
    if (to === from) {
      const why = siblingProblem(file, target);
      if (why) found.push({ file, line, target, why });
      continue;
    }
    if (isExample || from === "providers") {
      const allowed = isExample ? [] : exceptionsFor(file);
      if (to !== "provider" && !allowed.includes(to)) {
        const who = isExample ? "an example" : fromPart;
        found.push({ file, line, target, why: `${who} imports only the kit, provider/` });
      }
      continue;
    }
    if (isBench) {
      if (to === "tests") {
        found.push({
          file,
          line,
          target,
          why: "bench/ imports no test file; move what it shares with tests to tools/",
        });
      }
      continue;
    }
    if (isTool) {
      if (to === "tests" || to === "bench") {
        found.push({ file, line, target, why: "tools/ is shared by tests and the bench; move it" });
      }
      continue;
    }
    const toRank = LAYERS[to];
    if (toRank === undefined) {
      if (to === "deno.json") continue;
      found.push({ file, line, target, why: `${to} is not a product layer` });
    } else if (toRank >= fromRank) {
      const way = toRank === fromRank ? "sideways" : "up";
      found.push({
        file,
        line,
        target,
        why: `${from}/ (layer ${fromRank}) imports ${way} to ${to}`,
      });
    }
  }
  return found;
}

/** Why an import inside one top-level folder crosses between sibling subfolders, if it does. */
function siblingProblem(file: string, target: string): string | undefined {
  const [top, ...fromRest] = file.split("/");
  if (!APART.has(top)) return undefined;
  const toRest = target.split("/").slice(1);
  // A file directly in the top folder is shared; only subfolder-to-subfolder imports are checked.
  if (fromRest.length < 2 || toRest.length < 2 || fromRest[0] === toRest[0]) return undefined;
  return `${top}/${fromRest[0]} imports its sibling ${top}/${toRest[0]}; pass it in through deps`;
}

async function* sourceFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* sourceFiles(path);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
  }
}

/** Checks every product file under `root`. */
export async function checkTree(root: string): Promise<LayerViolation[]> {
  const found: LayerViolation[] = [];
  for (const top of [...Object.keys(LAYERS), "examples", "tools", "bench"]) {
    const path = resolve(root, top);
    const stat = await Deno.stat(path).catch(() => undefined);
    if (!stat) continue;
    const files = stat.isFile ? [path] : await Array.fromAsync(sourceFiles(path));
    for (const file of files) {
      found.push(...checkSource(relative(root, file), await Deno.readTextFile(file)));
    }
  }
  return found;
}

if (import.meta.main) {
  const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
  const found = await checkTree(root);
  for (const v of found) {
    console.error(`${v.file}:${v.line}: imports ${v.target}: ${v.why}`);
  }
  if (found.length > 0) {
    console.error(
      `${found.length} import(s) break the layering; move the code down a layer or pass it in ` +
        "through deps (see docs/development.md, Layout)",
    );
    Deno.exit(1);
  }
  console.log("layers: every import points down");
}
