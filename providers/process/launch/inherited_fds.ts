/**
 * Open files vkubelet inherited from whatever started it (a shell's `exec 5<file`, a service
 * manager, a test harness) would reach every process it starts, containers included: Deno
 * opens its own files close-on-exec and starts children without closing anything, so a
 * container could read a root-only file through such a descriptor (`cat <&5`).
 *
 * Two layers, because neither covers everything alone:
 *
 * - At start-up every descriptor above stderr that is not close-on-exec is made so, with the
 *   C library's `fcntl(fd, F_SETFD, FD_CLOEXEC)` through FFI: vkubelet keeps them, no child
 *   gets them. That needs `--allow-ffi` for the C library (`deno task start` grants it); without
 *   it {@link closeInheritedOnExec} says which descriptors are left, for a warning.
 * - The root stages of the hand-over (./launcher.ts runner, ./entry.ts `OPEN_ENV`) close fds 3
 *   to 9 before they open their own, FFI or not: dash, the usual `/bin/sh`, can name only fds
 *   0 to 9 in a redirection, so higher ones can be kept from containers only by the first layer.
 *
 * They are marked, not closed: none is Deno's (Deno opens its own close-on-exec), and vkubelet
 * keeps whatever its starter meant it to have.
 * @module
 */

import { hostCommand } from "../host/host_tools.ts";
import { readProcLink, readProcText } from "../host/proc.ts";

/** The `O_CLOEXEC` bit of the `flags:` line of `/proc/<pid>/fdinfo/<fd>` (octal there). */
const O_CLOEXEC = 0o2000000;
const F_SETFD = 2;
const FD_CLOEXEC = 1;

/** What {@link closeInheritedOnExec} did: the fds it marked, those it could not, and why. */
export interface InheritedFds {
  marked: number[];
  /** Descriptors children still get, with what they point at. */
  left: { fd: number; target: string }[];
  /** Why some of `left` reach containers (those above fd 9); a warning for the log. */
  warning?: string;
}

// Prints "<fd> <flags>" for each fd of process $1, with sh builtins only.
const FD_FLAGS = `cd "/proc/$1/fdinfo" || exit 1
for f in *; do while read -r k v; do [ "$k" = flags: ] && echo "$f $v"; done < "$f"; done`;

/**
 * Each fd of this process with its open flags. Deno reads `/proc` only with --allow-all, which
 * vkubelet is not given; then a host `sh` reads them (by PID: `self` would be the shell).
 */
function fdFlags(): Map<number, number> {
  const flags = new Map<number, number>();
  let lines: string[];
  try {
    lines = [];
    for (const entry of Deno.readDirSync(`/proc/${Deno.pid}/fdinfo`)) {
      try {
        const info = Deno.readTextFileSync(`/proc/${Deno.pid}/fdinfo/${entry.name}`);
        lines.push(`${entry.name} ${/^flags:\s+(\d+)/m.exec(info)?.[1]}`);
      } catch (err) {
        if (err instanceof Deno.errors.NotCapable) throw err;
        // closed meanwhile (the listing's own fd, for one)
      }
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotCapable)) throw err;
    const args = ["-c", FD_FLAGS, "vkubelet-fds", String(Deno.pid)];
    const out = hostCommand("sh", { args, stdout: "piped", stderr: "null" }).outputSync();
    lines = new TextDecoder().decode(out.stdout).split("\n");
  }
  for (const line of lines) {
    const match = /^(\d+) ([0-7]+)$/.exec(line.trim());
    if (match) flags.set(Number(match[1]), parseInt(match[2], 8));
  }
  return flags;
}

/** The fds above stderr of this process that children would inherit. */
export function inheritableFds(): { fd: number; target: string }[] {
  const found: { fd: number; target: string }[] = [];
  for (const [fd, flags] of fdFlags()) {
    if (fd <= 2 || flags & O_CLOEXEC) continue;
    try {
      found.push({ fd, target: readProcLink(`/proc/${Deno.pid}/fd/${fd}`) });
    } catch {
      // closed meanwhile
    }
  }
  return found.sort((a, b) => a.fd - b.fd);
}

/** The C library this process has mapped, as its `/proc/<pid>/maps` names it. */
function loadedLibc(): string | undefined {
  for (const line of readProcText(`/proc/${Deno.pid}/maps`).split("\n")) {
    const path = line.trim().split(/\s+/).slice(5).join(" ");
    if (/\/libc\.so\.6$|\/ld-musl-[^/]+\.so\.1$/.test(path)) return path;
  }
  return undefined;
}

/** Marks every inherited fd above stderr close-on-exec (see the module doc). */
export function closeInheritedOnExec(): InheritedFds {
  const fds = inheritableFds();
  if (fds.length === 0) return { marked: [], left: [] };
  const unable = (why: string, left = fds, marked: number[] = []): InheritedFds => {
    // The root stages close fds up to 9 themselves.
    const high = left.filter((f) => f.fd > 9);
    if (high.length === 0) return { marked, left };
    const files = high.map((f) => `fd ${f.fd}: ${f.target}`).join(", ");
    return {
      marked,
      left,
      warning:
        `every container gets the open files vkubelet inherited (${files}): they cannot be marked close-on-exec (${why}); start vkubelet without them, or grant --allow-ffi for the C library`,
    };
  };
  if (Deno.build.os !== "linux") return unable(`${Deno.build.os} is not Linux`);
  const libc = loadedLibc();
  if (!libc) return unable("no C library is mapped");
  if (Deno.permissions.querySync({ name: "ffi", path: libc }).state !== "granted") {
    return unable(`no FFI permission for ${libc}`);
  }
  let library;
  try {
    library = Deno.dlopen(libc, {
      // fcntl is variadic; its third argument is an int, passed as one on x86_64 and aarch64.
      fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
    });
  } catch (err) {
    return unable(`${libc}: ${err instanceof Error ? err.message : err}`);
  }
  try {
    const marked: number[] = [];
    for (const { fd } of fds) {
      if (library.symbols.fcntl(fd, F_SETFD, FD_CLOEXEC) === 0) marked.push(fd);
    }
    const left = inheritableFds();
    return left.length ? unable("fcntl failed", left, marked) : { marked, left };
  } finally {
    library.close();
  }
}
