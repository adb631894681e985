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
 *
 * Some of the host is not shared at all. `/dev` is a tmpfs of its own (`nosuid,mode=755`, as
 * opencontainers/runc libcontainer/specconv/example.go mounts it) with the devices runc gives
 * every container (libcontainer/specconv/spec_linux.go `AllowedDevices`: null, zero, full,
 * random, urandom and tty), bound from the host's nodes onto empty files as runc does without
 * mknod (libcontainer/rootfs_linux.go `bindMountDeviceNode`); a new devpts instance at `/dev/pts`
 * (`newinstance,ptmxmode=0666,mode=0620,gid=5`, example.go) with `/dev/ptmx` a link to its
 * `ptmx`; and the `/dev/fd`, `stdin`, `stdout` and `stderr` links (rootfs_linux.go
 * `setupDevSymlinks`). The namespace's `/dev/pts` (outside the view) is bound to that instance
 * too, so a `kubectl exec -t` session's terminal, which `script` opens there
 * (../streams/exec.ts), is the view's and found by name (`tty`, tmux). `/tmp`
 * and `/var/tmp` are the container's own, empty at each start, as they are in the writable layer
 * of a container's image; `/dev/shm` is the pod's, shared by its containers, as the pod
 * sandbox's is (containerd internal/cri/server/container_create_linux.go `containerMounts` binds
 * the sandbox's shm in each container). These directories live in the pod's directory and go
 * with it.
 * @module
 */
import { basename, dirname, join, normalize } from "node:path";
import { hostCommand, toolPath } from "../host/host_tools.ts";
import { WALK_FUNCTIONS } from "./safe_walk.ts";
import type { ResolvedSubPath } from "./sub_path.ts";
import { hostUser } from "./identity.ts";

/** One bind mount into the container's view. */
export interface ViewMount {
  /**
   * Host path of the volume (or file inside it, for subPath), symlinks resolved: the set-up
   * refuses a source whose path holds a symlink when it binds it.
   */
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

/**
 * What a container's view hides: `paths` under empty tmpfs, except the pod's own `keep`; and
 * what it gives the container of its own instead of the host's.
 */
export interface HiddenPaths {
  paths: string[];
  keep: string;
  /** Directories inside `keep` bound at `/tmp`, `/var/tmp` and `/dev/shm` ({@link ownDirs}). */
  own?: OwnDirs;
}

/** The container's `/tmp` and `/var/tmp` and the pod's `/dev/shm`, relative to the pod's directory. */
export interface OwnDirs {
  tmp: string;
  varTmp: string;
  shm: string;
}

/**
 * The directories of {@link OwnDirs} for a new instance of `container`: its `/tmp` and
 * `/var/tmp` are emptied, as a new container's writable layer is; the pod's `/dev/shm` stays. The
 * set-up creates them, mode 1777 as the host's.
 */
export async function ownDirs(podDir: string, container: string): Promise<OwnDirs> {
  const own = {
    tmp: `containers/${container}/tmp`,
    varTmp: `containers/${container}/var-tmp`,
    shm: "shm",
  };
  for (const dir of [own.tmp, own.varTmp]) {
    await Deno.remove(join(podDir, dir), { recursive: true }).catch(() => {});
  }
  return own;
}

/** The devices of every container (runc's default devices; /dev/console only with a terminal). */
const DEVICES = ["null", "zero", "full", "random", "urandom", "tty"];

/**
 * Lines that cover each of `hidden.paths` in the view with an empty tmpfs (a file with
 * /dev/null), then bind `hidden.keep` (the pod's own directory, inside the hidden state
 * directory) back, so that the container sees neither vkubelet's files nor other pods'.
 */
function hideLines(root: string, hidden: HiddenPaths, keep: string): string[] {
  const lines: string[] = [];
  for (const path of [...hidden.paths].sort((a, b) => depth(a) - depth(b))) {
    const at = shellQuote(join(root, path));
    lines.push(
      `if [ -d ${at} ]; then mount -t tmpfs -o mode=755,size=64k vkubelet-hidden ${at}; ` +
        `elif [ -e ${at} ]; then mount --bind /dev/null ${at}; fi`,
    );
  }
  // Made without following a link: with a state directory under /tmp, it is made in the
  // container's own /tmp.
  const mount = { source: keep, target: keep, readOnly: false };
  lines.push(...placeLines(root, keep.slice(1), mount));
  return lines;
}

/**
 * Lines that make `root + dir` a view: a tmpfs holding binds of every entry of host `dir` but
 * those in `skip` (for which only the mount point is made).
 */
function viewLines(root: string, dir: string, skip: string[] = []): string[] {
  const at = join(root, dir);
  const lines = [`mount -t tmpfs -o mode=755 vkubelet-view ${shellQuote(at)}`];
  for (const entry of Deno.readDirSync(dir)) {
    const host = join(dir, entry.name);
    const inView = shellQuote(join(at, entry.name));
    if (skip.includes(entry.name)) {
      lines.push(`mkdir ${inView}`);
    } else if (entry.isSymlink) {
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
 * Lines that give the view its own `/dev` (a tmpfs made in the view's root, so no device of
 * the host but runc's defaults is there), with `/dev/shm` the pod's directory `shm` if given,
 * else a tmpfs of the container's.
 */
function devLines(root: string, shm: ViewMount | undefined): string[] {
  const dev = join(root, "dev");
  const at = (name: string) => shellQuote(join(dev, name));
  const lines = [`mount -t tmpfs -o nosuid,mode=755,size=64k vkubelet-dev ${shellQuote(dev)}`];
  for (const name of DEVICES) {
    // The host's node, bound onto an empty file: no mknod, and only what the host has.
    if (!isCharDevice(`/dev/${name}`)) continue;
    lines.push(`: > ${at(name)}`, `mount --bind ${shellQuote(`/dev/${name}`)} ${at(name)}`);
  }
  lines.push(
    `mkdir ${at("pts")} ${at("shm")}`,
    `mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5,nosuid,noexec vkubelet-devpts ${
      at("pts")
    }`,
    `ln -s pts/ptmx ${at("ptmx")}`,
    // The namespace's own /dev/pts (outside the chroot) becomes the view's too: a terminal an
    // exec session's `script` opens through /dev/ptmx there is then found by name in the view.
    `mount --bind ${at("pts")} /dev/pts`,
    `ln -s /proc/self/fd ${at("fd")}`,
    ...["stdin", "stdout", "stderr"].map((name, fd) => `ln -s /proc/self/fd/${fd} ${at(name)}`),
  );
  if (shm) lines.push(...placeLines(root, "dev/shm", shm));
  else lines.push(`mount -t tmpfs -o nosuid,nodev,mode=1777 vkubelet-shm ${at("shm")}`);
  return lines;
}

/** The mounts of {@link OwnDirs}: each at its path in the view, if the host has it as a directory. */
function ownMounts(keep: string, own: OwnDirs): ViewMount[] {
  const mounts: ViewMount[] = [];
  for (
    const [target, path] of [["/tmp", own.tmp], ["/var/tmp", own.varTmp], ["/dev/shm", own.shm]]
  ) {
    // /dev is the view's own; /tmp or /var/tmp missing, or a symlink, on the host stays as it is.
    if (target !== "/dev/shm" && !isRealDirectory(target)) continue;
    const subPath = { volume: keep, path, isDirectory: true, mode: 0o1777 };
    mounts.push({ source: join(keep, path), target, readOnly: false, subPath });
  }
  return mounts;
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
  const keep = hidden ? Deno.realPathSync(hidden.keep) : undefined;
  const own = keep && hidden?.own ? ownMounts(keep, hidden.own) : [];
  const shm = own.find((m) => m.target === "/dev/shm");
  const tmps = own.filter((m) => m !== shm);
  // Nothing of the host's is bound under these: a missing mount point is made in them.
  const owned = ["/dev", ...tmps.map((m) => m.target)];
  const sorted = [...mounts].sort((a, b) => depth(a.target) - depth(b.target));
  const places = [...sorted.map((m) => m.target), ...extraDirs].map((dir) => splitExisting(dir));
  // Views first, outermost first, so that no later tmpfs hides a bind made before it.
  const views = new Set<string>();
  for (const { existing, rest } of places) {
    if (
      rest.length > 0 && existing !== "/" && !insideMount(existing, sorted) &&
      !owned.some((dir) => existing === dir || existing.startsWith(dir + "/"))
    ) views.add(existing);
  }
  const lines = [
    "set -e",
    // The walks' quiet stderr, opened while /dev allows it (./safe_walk.ts); closed at the end.
    "exec 4>/dev/null",
    `VK_DEV_MOUNTS=${shellQuote(devMounts().join(" "))}`,
    ...WALK_FUNCTIONS,
    ...viewLines(root, "/", ["dev", ...(tmps.some((m) => m.target === "/tmp") ? ["tmp"] : [])]),
  ];
  for (const dir of [...views].sort((a, b) => depth(a) - depth(b))) {
    lines.push(...viewLines(root, dir));
  }
  // After the views (which bind a directory's entries anew), before the volumes (which may
  // be asked for on purpose, e.g. a hostPath volume, or an emptyDir at /tmp).
  lines.push(...devLines(root, shm));
  for (const mount of tmps) lines.push(...placeLines(root, mount.target.slice(1), mount));
  if (hidden && keep) lines.push(...hideLines(root, hidden, keep));
  places.forEach(({ existing, rest }, i) => {
    const mount = sorted[i];
    lines.push(...placeLines(root, join(existing, ...rest).slice(1), mount));
  });
  lines.push("exec 4>&-");
  return lines;
}

/**
 * Lines that make `root/path` (a mount point, or with no `mount` a directory) and bind `mount`
 * there, never following a link on the way (./safe_walk.ts): the path may lie inside a volume
 * mounted before, whose content is the pod's; and so is the source reached.
 */
function placeLines(root: string, path: string, mount?: ViewMount): string[] {
  const at = `${shellQuote(root)} ${shellQuote(path)}`;
  if (!mount) return [`vk_walk ${at} dir ""`];
  const { lines, source, isFile } = sourceLines(mount);
  lines.push(
    `vk_walk ${at} ${isFile ? "file" : "dir"} ""`,
    `mount --no-canonicalize --bind ${source} /proc/self/fd/7`,
  );
  // fd 7 holds what is under the new mount: walk again to hold the mount itself.
  if (mount.readOnly) {
    // A file is held read-write by the walk: held so, the remount read-only would be refused
    // (EBUSY), so fd 7 is opened again read-only first.
    lines.push(
      `vk_walk ${at} none ""`,
      "exec 7</proc/self/fd/7",
      "mount --no-canonicalize -o remount,bind,ro /proc/self/fd/7",
    );
  }
  lines.push("exec 6<&- 7<&-");
  return lines;
}

/**
 * Lines that hold the mount's source on fd 6, reached from its volume (a subPath) or from its
 * own resolved path, without following a link; the path to bind, and whether it is a file. A
 * source that is neither a directory nor a regular file (a device, a socket of a hostPath) is
 * never opened: it is bound by name in the directory held.
 */
function sourceLines(mount: ViewMount): { lines: string[]; source: string; isFile: boolean } {
  const walk = (base: string, rest: string, create: string, mode = "") =>
    `vk_walk ${shellQuote(base)} ${shellQuote(rest)} ${create} ${mode || '""'}`;
  if (mount.subPath) {
    const { volume, path, isDirectory, mode } = mount.subPath;
    return {
      lines: [walk(volume, path, isDirectory ? "dir" : "none", mode.toString(8)), "exec 6<&7"],
      source: "/proc/self/fd/6",
      isFile: !isDirectory,
    };
  }
  const { source } = mount;
  let info: Deno.FileInfo | undefined;
  try {
    info = Deno.statSync(source);
  } catch {
    // Missing: the walk says so.
  }
  if (!info || info.isDirectory) {
    return {
      lines: [walk(source, "", "none"), "exec 6<&7"],
      source: "/proc/self/fd/6",
      isFile: false,
    };
  }
  if (info.isFile) {
    const lines = [walk(dirname(source), basename(source), "none"), "exec 6<&7"];
    return { lines, source: "/proc/self/fd/6", isFile: true };
  }
  const lines = [walk(dirname(source), "", "none"), "exec 6<&7"];
  return { lines, source: shellQuote(`/proc/self/fd/6/${basename(source)}`), isFile: true };
}

function depth(path: string): number {
  return normalize(path).split("/").filter(Boolean).length;
}

/** True if `dir` lies inside another mount's target: its mount point is then made in the volume. */
function insideMount(dir: string, mounts: ViewMount[]): boolean {
  return mounts.some((m) => dir.startsWith(normalize(m.target) + "/"));
}

function isCharDevice(path: string): boolean {
  try {
    return Deno.statSync(path).isCharDevice === true;
  } catch {
    return false;
  }
}

function isRealDirectory(path: string): boolean {
  try {
    return Deno.lstatSync(path).isDirectory;
  } catch {
    return false;
  }
}

/**
 * The host's mounts at `/dev` and below that allow devices: the walks make them `nodev` while
 * they open a file (./safe_walk.ts). Mount points with escaped characters are left out.
 */
function devMounts(): string[] {
  let text = "";
  try {
    text = Deno.readTextFileSync("/proc/self/mountinfo");
  } catch {
    return [];
  }
  const found = new Set<string>();
  for (const line of text.split("\n")) {
    const fields = line.split(" ");
    const [point, options] = [fields[4], fields[5]];
    if (!point || point.includes("\\") || options?.split(",").includes("nodev")) continue;
    if (point === "/dev" || point.startsWith("/dev/")) found.add(point);
  }
  return [...found];
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
  // From /proc/self/status: Deno.uid() wants --allow-sys=uid, which vkubelet is not granted.
  const { uid } = hostUser();
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
