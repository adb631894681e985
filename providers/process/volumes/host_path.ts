/**
 * hostPath volumes against `hostPath.allowedPrefixes`: a path is allowed when, compared path
 * segment by path segment, it lies under a prefix, both before (the spec as written) and after
 * resolving symlinks (what the container would really get), so `/srv/data-other`,
 * `/srv/data/../etc` and a symlink `/srv/data/link -> /etc` are all outside `/srv/data`.
 * `DirectoryOrCreate` and `FileOrCreate` paths are made from the prefix down, one directory at a
 * time, never following a link ({@link createHostPath}), and the view binds a hostPath from its
 * resolved path only if that is still where it leads (../launch/mount_ns.ts): a symlink another
 * pod swaps into the path after the check redirects neither.
 * @module
 */
import { basename, dirname, join, normalize, relative } from "node:path";
import { hostCommand } from "../host/host_tools.ts";
import { WALK_FUNCTIONS } from "../launch/safe_walk.ts";

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

/** True when the resolved `real` lies under one of `allowedPrefixes`, resolved; or there are none. */
export function isUnderRealPrefix(real: string, allowedPrefixes: string[]): boolean {
  if (allowedPrefixes.length === 0) return true;
  return allowedPrefixes.some((prefix) => {
    let realPrefix = prefix;
    try {
      realPrefix = Deno.realPathSync(prefix);
    } catch {
      // A prefix that does not exist holds nothing that exists.
    }
    return isUnderPrefix(real, realPrefix);
  });
}

/**
 * The script that makes `$1/$2` (a directory, and its missing parents), or with `$3` the file
 * `$3` in the existing directory `$1/$2`, from the directory `$1` down, as the kubelet makes them
 * (kubernetes/kubernetes pkg/volume/hostpath/host_path.go: directories 0755, the file 0644; a
 * file's parent is not made), through the walk of ../launch/safe_walk.ts: a
 * symlink or anything but a directory on the way is refused; the file is made by `dd conv=excl`
 * (O_EXCL, which follows nothing and opens nothing that exists).
 */
const CREATE_SCRIPT = [
  "set -e",
  "exec 4>/dev/null",
  "umask 022",
  ...WALK_FUNCTIONS,
  'if [ -z "$3" ]; then vk_walk "$1" "$2" dir 755; else vk_walk "$1" "$2" none ""; fi',
  'if [ -n "$3" ]; then',
  "  cd -P /proc/self/fd/7",
  '  [ -e "$3" ] || [ -L "$3" ] || dd of="$3" conv=excl count=0 status=none <.',
  "fi",
].join("\n");

/**
 * Makes a `DirectoryOrCreate` or `FileOrCreate` hostPath that is missing, from the allowed prefix
 * it lies under (or `/`) down; says why not if it cannot. The path has passed
 * {@link hostPathPrefixProblem}.
 */
export async function createHostPath(
  path: string,
  type: "DirectoryOrCreate" | "FileOrCreate",
  allowedPrefixes: string[],
): Promise<string | undefined> {
  try {
    const info = await Deno.stat(path);
    if (type === "DirectoryOrCreate" ? info.isDirectory : info.isFile) return undefined;
  } catch {
    // Missing: made below.
  }
  const real = await resolveHostPath(path);
  let base = allowedPrefixes.length === 0 ? "/" : undefined;
  for (const prefix of allowedPrefixes) {
    const realPrefix = await resolveHostPath(prefix).catch(() => prefix);
    if (isUnderPrefix(real, realPrefix)) {
      base = realPrefix;
      break;
    }
  }
  // Checked a moment ago: a symlink swapped in since.
  if (base === undefined) return `hostPath ${path} now leads outside hostPath.allowedPrefixes`;
  const file = type === "FileOrCreate" ? basename(real) : "";
  const dir = type === "FileOrCreate" ? dirname(real) : real;
  if (file && !(await Deno.stat(dir).then((info) => info.isDirectory, () => false))) {
    return `hostPath ${path}: its directory ${dir} does not exist (FileOrCreate makes only the file); create it or use DirectoryOrCreate for it`;
  }
  const out = await hostCommand("sh", {
    args: ["-c", CREATE_SCRIPT, "vkubelet-hostpath", base, relative(base, dir), file],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.success) return undefined;
  const detail = new TextDecoder().decode(out.stderr).trim() || `exit ${out.code}`;
  return `hostPath ${path} cannot be created: ${detail}`;
}
