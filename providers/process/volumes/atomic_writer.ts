/**
 * Writes a volume's files the way the kubelet's AtomicWriter does (kubernetes/kubernetes
 * pkg/volume/util/atomic_writer.go), so that a process reading a ConfigMap or Secret volume
 * never sees half an update: the files go into a fresh `..<timestamp>` directory, the `..data`
 * symlink is swapped to it with one rename, and each top-level name is a symlink through
 * `..data`. An update with the same content writes nothing.
 * @module
 */
import { dirname, join } from "node:path";
import { InvalidInputError } from "../../../provider/mod.ts";

/** One file of a volume: its path relative to the volume, content and mode. */
export interface VolumeFile {
  path: string;
  data: Uint8Array;
  mode: number;
}

/**
 * Rejects absolute paths, `..` components, the writer's own `..`-prefixed names and names too
 * long for a file system (upstream atomic_writer.go : validatePath).
 */
export function checkRelativePath(path: string): string | undefined {
  if (path === "" || path.startsWith("/")) return `path ${JSON.stringify(path)} must be relative`;
  if (path.length > 4096) return "a path must be at most 4096 characters";
  if (path.includes("\0")) return `path ${JSON.stringify(path)} must not contain NUL`;
  const parts = path.split("/");
  if (parts.some((p) => p === ".." || p === "")) {
    return `path ${JSON.stringify(path)} must not contain '..' or empty parts`;
  }
  if (parts.some((p) => p.length > 255)) return "a file name must be at most 255 characters";
  if (parts[0].startsWith("..")) return `path ${JSON.stringify(path)} must not start with '..'`;
  return undefined;
}

async function sameContent(dir: string, files: VolumeFile[]): Promise<boolean> {
  try {
    const current = await Deno.realPath(join(dir, "..data"));
    const existing = new Set<string>();
    await collect(current, "", existing);
    if (existing.size !== files.length) return false;
    for (const file of files) {
      const path = join(current, file.path);
      const [data, info] = await Promise.all([Deno.readFile(path), Deno.stat(path)]);
      if (((info.mode ?? 0) & 0o7777) !== file.mode) return false;
      if (data.length !== file.data.length || !data.every((b, i) => b === file.data[i])) {
        return false;
      }
    }
    return true;
  } catch {
    return false;
  }
}

async function collect(root: string, prefix: string, out: Set<string>): Promise<void> {
  for await (const entry of Deno.readDir(join(root, prefix))) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory) await collect(root, rel, out);
    else out.add(rel);
  }
}

/** Makes `dir` hold exactly `files`; returns false if nothing had to change. */
export async function writeAtomically(
  dir: string,
  files: VolumeFile[],
  nowMs: number,
): Promise<boolean> {
  // Every path, whoever built the list (keys without `items`, token paths): none may leave `dir`.
  for (const file of files) {
    const problem = checkRelativePath(file.path);
    if (problem) throw new InvalidInputError(`volume file ${problem}; nothing was written`);
  }
  await Deno.mkdir(dir, { recursive: true });
  if (await sameContent(dir, files)) return false;
  const stamp = new Date(nowMs).toISOString().replace(/[-:]/g, "_").replace("T", "_")
    .replace("Z", "");
  const version = `..${stamp}.${crypto.randomUUID().slice(0, 8)}`;
  const versionDir = join(dir, version);
  await Deno.mkdir(versionDir, { mode: 0o755 });
  for (const file of files) {
    const path = join(versionDir, file.path);
    await Deno.mkdir(dirname(path), { recursive: true });
    await Deno.writeFile(path, file.data, { mode: file.mode });
    await Deno.chmod(path, file.mode);
  }
  let previous: string | undefined;
  try {
    previous = await Deno.readLink(join(dir, "..data"));
  } catch {
    previous = undefined;
  }
  await Deno.remove(join(dir, "..data_tmp")).catch(() => {});
  await Deno.symlink(version, join(dir, "..data_tmp"));
  await Deno.rename(join(dir, "..data_tmp"), join(dir, "..data"));
  const top = new Set(files.map((f) => f.path.split("/")[0]));
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name.startsWith("..") || top.has(entry.name)) continue;
    await Deno.remove(join(dir, entry.name), { recursive: true }); // a key that went away
  }
  for (const name of top) {
    const link = join(dir, name);
    const exists = await Deno.lstat(link).then(() => true, () => false);
    if (!exists) await Deno.symlink(join("..data", name), link);
  }
  if (previous && previous !== version) {
    await Deno.remove(join(dir, previous), { recursive: true }).catch(() => {});
  }
  return true;
}
