/**
 * Builds `helm` (v4) from the Go module under `tools/helm/` — a main that calls Helm's own root
 * command constructor (`helm.sh/helm/v4/pkg/cmd`) — once: the binary is cached under
 * `.cache/bin/`, named by Helm's version and a hash of the module's sources, so later runs
 * reuse it. The chart tests (tests/ship/helm_test.ts) run it; so can a person:
 * `deno run -A tools/helm/build.ts` prints the path.
 * @module
 */

import { realClock } from "../../base/clock.ts";
import { BuildProgress, forEachLine } from "../cluster/build_progress.ts";
import { cacheDir } from "../cluster/build.ts";

const moduleDir = new URL(".", import.meta.url).pathname;
const sources = ["go.mod", "go.sum", "cmd/helm/main.go"];

/** The Helm version the binary is built at, read from the wrapper's go.mod. */
export function helmVersion(): string {
  const gomod = Deno.readTextFileSync(`${moduleDir}go.mod`);
  const match = gomod.match(/^\s*(?:require\s+)?helm\.sh\/helm\/v4 (v[0-9.]+)/m);
  if (!match) throw new Error(`${moduleDir}go.mod does not require helm.sh/helm/v4`);
  return match[1];
}

async function sourceHash(): Promise<string> {
  const text = sources.map((f) => `${f}\n${Deno.readTextFileSync(moduleDir + f)}`).join("\n");
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return Array.from(digest.slice(0, 6), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Options for {@link ensureHelm}. */
export interface HelmBuildOptions {
  /** Called with progress lines for a person watching. */
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

/** Returns the path of the `helm` binary, building it first if it is not cached. */
export async function ensureHelm(options: HelmBuildOptions = {}): Promise<string> {
  const version = helmVersion();
  const path = `${cacheDir}/bin/helm-${version}-${await sourceHash()}`;
  try {
    await Deno.stat(path);
    return path;
  } catch {
    // Not built yet.
  }
  const progress = options.progress ?? (() => {});
  await Deno.mkdir(`${cacheDir}/bin`, { recursive: true });
  progress(`building helm ${version} from Go modules; later runs reuse it`);
  const started = performance.now();
  const tmp = `${path}.tmp-${Deno.pid}`;
  const ldflags = `-s -w -X helm.sh/helm/v4/internal/version.version=${version}`;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("go", {
      args: ["build", "-v", "-trimpath", "-ldflags", ldflags, "-o", tmp, "./cmd/helm"],
      cwd: moduleDir,
      stdout: "inherit",
      stderr: "piped",
      signal: options.signal,
    }).spawn();
  } catch (err) {
    throw new Error(
      "cannot run `go`: helm is built from Go modules, so Go 1.26 or newer must be on PATH",
      { cause: err },
    );
  }
  const watcher = new BuildProgress({ clock: realClock, print: progress });
  const ticking = new AbortController();
  const ticker = watcher.run(ticking.signal);
  await forEachLine(child.stderr, (line) => watcher.line(line));
  const status = await child.status;
  ticking.abort();
  await ticker;
  if (!status.success) {
    await Deno.remove(tmp).catch(() => {});
    throw new Error(`go build of helm failed (exit ${status.code}); see the output above`);
  }
  await Deno.rename(tmp, path);
  progress(`built ${path} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  return path;
}

if (import.meta.main) {
  console.log(await ensureHelm({ progress: (line) => console.error(line) }));
}
