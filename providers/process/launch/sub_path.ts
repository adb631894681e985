/**
 * A volumeMount's `subPath`, resolved as the kubelet does since CVE-2017-1002101
 * (kubernetes/kubernetes pkg/volume/util/subpath/subpath_linux.go `doBindSubPath`,
 * `safeOpenSubPath`, `doSafeMakeDir`): its symlinks are evaluated once and the result must lie
 * inside the volume; what is missing of it is created as directories inside the volume, with
 * the volume's mode (pkg/kubelet/kubelet_pods.go `makeMounts`). The view's set-up then walks
 * the result without following links (./safe_walk.ts), creates what is missing there, and binds
 * what it holds, so that root never follows a link the pod made.
 * @module
 */
import { join, relative } from "node:path";

/** A subPath resolved inside its volume. */
export interface ResolvedSubPath {
  /** The volume's directory, symlinks resolved. */
  volume: string;
  /** The subPath relative to `volume`, symlinks resolved ("" for the volume itself). */
  path: string;
  /** True unless it names an existing regular file. */
  isDirectory: boolean;
  /** The volume directory's mode, which created directories get. */
  mode: number;
}

/** Resolves `subPath` (already checked to be relative, without `..`) inside `volumeDir`. */
export function resolveSubPath(
  volumeDir: string,
  subPath: string,
): { ok: true; subPath: ResolvedSubPath } | { ok: false; reason: string } {
  let volume: string;
  try {
    volume = Deno.realPathSync(volumeDir);
  } catch {
    return { ok: false, reason: "its volume does not exist yet" };
  }
  // The caller gives the volume's resolved path (../volumes/volumes.ts `hostPathOf`): one
  // that resolves elsewhere now has had a symlink swapped in (a hostPath out of its prefix).
  if (volume !== volumeDir) {
    return { ok: false, reason: "its volume's path now has a symlink in it; it is not used" };
  }
  const mode = (Deno.statSync(volume).mode ?? 0o755) & 0o7777;
  const parts = subPath.split("/").filter(Boolean);
  for (let i = parts.length; i >= 0; i--) {
    let real: string;
    try {
      real = Deno.realPathSync(join(volume, ...parts.slice(0, i)));
    } catch {
      continue; // missing, or a link to nowhere (found just below)
    }
    const inside = relative(volume, real);
    if (inside === ".." || inside.startsWith("../")) {
      return { ok: false, reason: "it leads out of the volume through a symlink" };
    }
    const rest = parts.slice(i);
    const info = Deno.statSync(real);
    if (rest.length > 0) {
      if (!info.isDirectory) return { ok: false, reason: `${parts[i - 1]} is not a directory` };
      try {
        Deno.lstatSync(join(real, rest[0]));
        return { ok: false, reason: `${rest[0]} is a symlink that leads nowhere` };
      } catch {
        // missing: created by the set-up
      }
    } else if (!info.isDirectory && !info.isFile) {
      return { ok: false, reason: "it is neither a file nor a directory" };
    }
    const path = [inside, ...rest].filter(Boolean).join("/");
    return {
      ok: true,
      subPath: { volume, path, isDirectory: !info.isFile || rest.length > 0, mode },
    };
  }
  return { ok: false, reason: "its volume does not exist yet" };
}
