/**
 * A private view of the host's filesystem for one container, so that volumes appear at their
 * `mountPath` without touching the host. Inside a new mount namespace (`unshare -m` from
 * util-linux, which needs root or CAP_SYS_ADMIN) the runner builds a root on a tmpfs in which
 * every entry of `/` is a recursive bind of the host's entry (so files stay shared, reads and
 * writes go to the host), then binds each volume at its path and `chroot`s into that root. A
 * mount path whose directory does not exist on the host turns its nearest existing ancestor
 * into a "view" the same way (a tmpfs with binds of that directory's entries), so the new
 * directory exists only for this container. Nothing needs cleaning up: the namespace and every
 * mount in it vanish with the container's last process. In the view, the provider's state
 * directory (all pods' Secrets, tokens and logs) but for the pod's own directory, and the
 * config's `hiddenPaths` (vkubelet's config, kubeconfig and keys), are covered by empty tmpfs.
 * @module
 */
import { join, normalize } from "node:path";
import { hostCommand, toolPath } from "../host/host_tools.ts";
import { WALK_FUNCTIONS } from "./safe_walk.ts";
import type { ResolvedSubPath } from "./sub_path.ts";

/** One bind mount into the container's view. */
export interface ViewMount {
  /** Host path of the volume (or file inside it, for subPath). */
  source: string;
  /** Absolute path inside the container. */
  target: string;
  readOnly: boolean;
  /** For a subPath: bound from what the set-up reaches without following links (./sub_path.ts). */
  subPath?: ResolvedSubPath;
}

/** Quotes `text` for sh. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** The host's deepest existing ancestor of `path` (symlinks resolved) and the rest of it. */
export function splitExisting(path: string): { existing: string; rest: string[] } {
  const parts = normalize(path).split("/").filter(Boolean);
  for (let i = parts.length; i >= 0; i--) {
    try {
      const existing = Deno.realPathSync("/" + parts.slice(0, i).join("/"));
      return { existing, rest: parts.slice(i) };
    } catch {
      // Missing (or a dangling symlink): try its parent.
    }
  }
  return { existing: "/", rest: parts };
}

/** What a container's view hides: `paths` under empty tmpfs, except the pod's own `keep`. */
export interface HiddenPaths {
  paths: string[];
  keep: string;
}

/**
 * Lines that cover each of `hidden.paths` in the view with an empty tmpfs (a file with
 * /dev/null), then bind `hidden.keep` (the pod's own directory, inside the hidden state
 * directory) back, so that the container sees neither vkubelet's files nor other pods'.
 */
function hideLines(root: string, hidden: HiddenPaths): string[] {
  const lines: string[] = [];
  for (const path of [...hidden.paths].sort((a, b) => depth(a) - depth(b))) {
    const at = shellQuote(join(root, path));
    lines.push(
      `if [ -d ${at} ]; then mount -t tmpfs -o mode=755,size=64k vkubelet-hidden ${at}; ` +
        `elif [ -e ${at} ]; then mount --bind /dev/null ${at}; fi`,
    );
  }
  const keep = shellQuote(join(root, hidden.keep));
  lines.push(`mkdir -p ${keep}`, `mount --bind ${shellQuote(hidden.keep)} ${keep}`);
  return lines;
}

/** Lines that make `root + dir` a view: a tmpfs holding binds of every entry of host `dir`. */
function viewLines(root: string, dir: string): string[] {
  const at = join(root, dir);
  const lines = [`mount -t tmpfs -o mode=755 vkubelet-view ${shellQuote(at)}`];
  for (const entry of Deno.readDirSync(dir)) {
    const host = join(dir, entry.name);
    const inView = shellQuote(join(at, entry.name));
    if (entry.isSymlink) {
      lines.push(`ln -s ${shellQuote(Deno.readLinkSync(host))} ${inView}`);
    } else if (entry.isDirectory) {
      lines.push(`mkdir ${inView}`, `mount --rbind ${shellQuote(host)} ${inView}`);
    } else {
      lines.push(`: > ${inView}`, `mount --bind ${shellQuote(host)} ${inView}`);
    }
  }
  return lines;
}

/**
 * The sh lines that build the container's root at `root` (an empty host directory) with
 * `mounts` in place, and `extraDirs` (e.g. a working directory missing on the host) created in
 * the view. The caller runs them inside `unshare -m --propagation private`, then `chroot`s.
 */
export function viewScript(
  root: string,
  mounts: ViewMount[],
  extraDirs: string[] = [],
  hidden?: HiddenPaths,
): string[] {
  // The walks compare the kernel's paths with these: no symlink may be left in the root's.
  root = Deno.realPathSync(root);
  const sorted = [...mounts].sort((a, b) => depth(a.target) - depth(b.target));
  const places = [...sorted.map((m) => m.target), ...extraDirs].map((dir) => splitExisting(dir));
  // Views first, outermost first, so that no later tmpfs hides a bind made before it.
  const views = new Set<string>();
  for (const { existing, rest } of places) {
    if (rest.length > 0 && existing !== "/" && !insideMount(existing, sorted)) views.add(existing);
  }
  const lines = ["set -e", ...WALK_FUNCTIONS, ...viewLines(root, "/")];
  for (const dir of [...views].sort((a, b) => depth(a) - depth(b))) {
    lines.push(...viewLines(root, dir));
  }
  // After the views (which bind a directory's entries anew), before the volumes (which may
  // be asked for on purpose, e.g. a hostPath volume).
  if (hidden) lines.push(...hideLines(root, hidden));
  places.forEach(({ existing, rest }, i) => {
    const mount = sorted[i];
    lines.push(...placeLines(root, join(existing, ...rest).slice(1), mount));
  });
  return lines;
}

/**
 * Lines that make `root/path` (a mount point, or with no `mount` a directory) and bind `mount`
 * there, never following a link on the way (./safe_walk.ts): the path may lie inside a volume
 * mounted before, whose content is the pod's.
 */
function placeLines(root: string, path: string, mount?: ViewMount): string[] {
  const at = `${shellQuote(root)} ${shellQuote(path)}`;
  if (!mount) return [`vk_walk ${at} dir ""`];
  const lines: string[] = [];
  let source = shellQuote(mount.source);
  if (mount.subPath) {
    const { volume, path: sub, mode } = mount.subPath;
    lines.push(`vk_walk ${shellQuote(volume)} ${shellQuote(sub)} dir ${mode.toString(8)}`);
    lines.push("exec 6<&7");
    source = "/proc/self/fd/6";
  }
  const isFile = mount.subPath ? !mount.subPath.isDirectory : isFileSource(mount.source);
  lines.push(
    `vk_walk ${at} ${isFile ? "file" : "dir"} ""`,
    `mount --no-canonicalize --bind ${source} /proc/self/fd/7`,
  );
  // fd 7 holds what is under the new mount: walk again to hold the mount itself.
  if (mount.readOnly) {
    lines.push(
      `vk_walk ${at} none ""`,
      "mount --no-canonicalize -o remount,bind,ro /proc/self/fd/7",
    );
  }
  lines.push("exec 6<&- 7<&-");
  return lines;
}

function depth(path: string): number {
  return normalize(path).split("/").filter(Boolean).length;
}

/** True if `dir` lies inside another mount's target: its mount point is then made in the volume. */
function insideMount(dir: string, mounts: ViewMount[]): boolean {
  return mounts.some((m) => dir.startsWith(normalize(m.target) + "/"));
}

function isFileSource(path: string): boolean {
  try {
    return !Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

/**
 * Whether this host can give containers their view: a private mount namespace and a PID
 * namespace with its own /proc, made as the launcher makes them (../launch/launcher.ts). If
 * not, the reason names what is missing and how to get it; a systemd unit's
 * `RestrictNamespaces=` that lacks `pid` or `mnt` is the usual cause.
 */
export async function probeMountNamespace(): Promise<
  { ok: true } | { ok: false; reason: string }
> {
  const uid = Deno.uid();
  if (uid !== 0) {
    return {
      ok: false,
      reason:
        `vkubelet runs as uid ${uid}, not root, and only root can give containers their own mount and PID namespaces; run vkubelet as root`,
    };
  }
  const dir = await Deno.makeTempDir({ prefix: "vkubelet-ns-probe-" });
  try {
    const full = await tryUnshare(["--pid", "--fork", "--mount-proc"], dir);
    if (full === undefined) return { ok: true };
    // Which one is missing: a mount namespace alone, then with the PID namespace.
    const mountOnly = await tryUnshare([], dir);
    const hint =
      "; under systemd, allow both in the unit with RestrictNamespaces=mnt pid (deploy/systemd/vkubelet.service)";
    if (mountOnly !== undefined) {
      return {
        ok: false,
        reason: `a private mount namespace cannot be created (unshare -m: ${mountOnly})${
          permissionDenied(mountOnly) ? hint : ""
        }`,
      };
    }
    return {
      ok: false,
      reason: `a PID namespace cannot be created (unshare --pid: ${full})${
        permissionDenied(full) ? hint : ""
      }`,
    };
  } catch (err) {
    const why = err instanceof Deno.errors.NotFound
      ? "unshare (util-linux) is not installed; install util-linux"
      : String(err);
    return { ok: false, reason: why };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Runs a mount test in a new mount namespace with `extra` unshare flags: undefined, or the error. */
async function tryUnshare(extra: string[], dir: string): Promise<string | undefined> {
  const script = 'mount -t tmpfs vkubelet-probe "$1" && mount --bind "$1" "$1"';
  const out = await hostCommand("unshare", {
    args: [
      ...["-m", "--propagation", "private", ...extra],
      ...["--", toolPath("sh"), "-c", script, "sh", dir],
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.success) return undefined;
  return new TextDecoder().decode(out.stderr).trim() || `exit ${out.code}`;
}

function permissionDenied(detail: string): boolean {
  return /Operation not permitted|Permission denied/.test(detail);
}
