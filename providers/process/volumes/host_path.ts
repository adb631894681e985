/**
 * hostPath volumes against `hostPath.allowedPrefixes`: a path is allowed when, compared path
 * segment by path segment, it lies under a prefix, both before (the spec as written) and after
 * resolving symlinks (what the container would really get), so `/srv/data-other`,
 * `/srv/data/../etc` and a symlink `/srv/data/link -> /etc` are all outside `/srv/data`.
 * @module
 */
import { basename, dirname, join, normalize } from "node:path";

/** True when absolute `path` is `prefix` or inside it, segment by segment. */
export function isUnderPrefix(path: string, prefix: string): boolean {
  const parts = segments(path), base = segments(prefix);
  return base.length <= parts.length && base.every((part, i) => parts[i] === part);
}

function segments(path: string): string[] {
  return normalize(path).split("/").filter((p) => p !== "");
}

/** Why `path` is not a usable hostPath as written (relative, or with `..`), if it is not. */
export function hostPathSyntaxProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return `hostPath ${path} must be absolute`;
  // The apiserver refuses backsteps too (validation.go : validatePathNoBacksteps).
  if (path.split("/").includes("..")) return `hostPath ${path} must not contain '..'`;
  return undefined;
}

/**
 * `path` with every symlink resolved; the part that does not exist yet (a hostPath that is
 * `DirectoryOrCreate`) is appended to its deepest existing ancestor, resolved.
 */
export async function resolveHostPath(path: string): Promise<string> {
  const rest: string[] = [];
  let current = normalize(path);
  for (;;) {
    try {
      return join(await Deno.realPath(current), ...rest.reverse());
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound) || current === "/") throw err;
      rest.push(basename(current));
      current = dirname(current);
    }
  }
}

/**
 * Why `path` is outside `allowedPrefixes` once symlinks are resolved (the prefixes are resolved
 * too), or undefined when it is inside one. An empty list allows every path.
 */
export async function hostPathPrefixProblem(
  path: string,
  allowedPrefixes: string[],
): Promise<string | undefined> {
  if (allowedPrefixes.length === 0) return undefined;
  const real = await resolveHostPath(path);
  for (const prefix of allowedPrefixes) {
    const realPrefix = await resolveHostPath(prefix).catch(() => prefix);
    if (isUnderPrefix(path, prefix) && isUnderPrefix(real, realPrefix)) return undefined;
  }
  return `hostPath ${path} (${real} with symlinks resolved) is outside hostPath.allowedPrefixes (${
    allowedPrefixes.join(", ")
  })`;
}
