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
 *   to 8 before they open their own: dash, the usual `/bin/sh`, can name only fds 0 to 9 in a
 *   redirection, so higher ones can be closed only by the first layer.
 *
 * Marking is enough where closing would be wrong: a descriptor without close-on-exec is never
 * one of Deno's, so vkubelet itself loses nothing.
 * @module
 */

/** The `O_CLOEXEC` bit of the `flags:` line of `/proc/<pid>/fdinfo/<fd>` (octal there). */
const O_CLOEXEC = 0o2000000;
const F_SETFD = 2;
const FD_CLOEXEC = 1;

/** What {@link closeInheritedOnExec} did: the fds it marked, those it could not, and why. */
export interface InheritedFds {
  marked: number[];
  /** Descriptors children still get, with what they point at. */
  left: { fd: number; target: string }[];
  /** Why `left` is not empty; a warning for the log. */
  warning?: string;
}

/** The fds above stderr of this process that children would inherit. */
export function inheritableFds(): { fd: number; target: string }[] {
  const found: { fd: number; target: string }[] = [];
  for (const entry of Deno.readDirSync("/proc/self/fd")) {
    const fd = Number(entry.name);
    if (!(fd > 2)) continue;
    try {
      const info = Deno.readTextFileSync(`/proc/self/fdinfo/${fd}`);
      const flags = parseInt(/^flags:\s+([0-7]+)/m.exec(info)?.[1] ?? "", 8);
      if (Number.isNaN(flags) || flags & O_CLOEXEC) continue;
      found.push({ fd, target: Deno.readLinkSync(`/proc/self/fd/${fd}`) });
    } catch {
      // closed meanwhile (the directory listing's own fd, for one)
    }
  }
  return found;
}

/** The C library this process has mapped, as `/proc/self/maps` names it. */
function loadedLibc(): string | undefined {
  for (const line of Deno.readTextFileSync("/proc/self/maps").split("\n")) {
    const path = line.trim().split(/\s+/).slice(5).join(" ");
    if (/\/libc\.so\.6$|\/ld-musl-[^/]+\.so\.1$/.test(path)) return path;
  }
  return undefined;
}

/** Marks every inherited fd above stderr close-on-exec (see the module doc). */
export function closeInheritedOnExec(): InheritedFds {
  const fds = inheritableFds();
  if (fds.length === 0) return { marked: [], left: [] };
  const unable = (why: string, left = fds, marked: number[] = []): InheritedFds => ({
    marked,
    left,
    warning: `every container gets the open files vkubelet inherited (${
      left.map((f) => `fd ${f.fd}: ${f.target}`).join(", ")
    }), as it cannot mark them close-on-exec: ${why}; start vkubelet without them, or grant --allow-ffi for the C library`,
  });
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
