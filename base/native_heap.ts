/**
 * Gives the C heap's free pages back to the system now and then, as the Go runtime's background
 * scavenger does for the kubelet. Deno's native buffers (request and response bodies, HTTP/2 and
 * TLS state, `ArrayBuffer` backing stores) come from glibc's malloc, which on its own returns
 * memory only from the top of an arena: after a burst, such as the list of 10,000 pods at start
 * or a mass deletion, the free chunks below one still in use stay resident. glibc's
 * `malloc_trim(0)` releases every free page of every arena. One vkubelet with 10,000 pods: glibc's
 * heap 45.5 → 15.5 MiB after one call (bench/reports/why.md, twelfth round).
 *
 * It needs glibc on Linux and `--allow-ffi` for glibc's shared object (scripts/permissions.ts);
 * elsewhere {@link openGlibcHeap} says why not and nothing is trimmed. That grant is wide: Deno
 * scopes `--allow-ffi` to the library, not to the function, so a grant for libc lets this
 * process call any libc function (`system`, `dlopen`, `mprotect`), which is close to
 * `--allow-all` for it. Only `malloc_trim` is bound here; operators who want the grant gone run
 * with `--native-heap-trim=false` and without `--allow-ffi`.
 *
 * Only the C library the process has loaded is opened, as `/proc/<pid>/maps` names it: opening
 * another file of the grant's list (a second libc on a multiarch host) would load a second C
 * library into the process.
 * @module
 */
import type { Clock } from "./clock.ts";

/** A native heap that can give its free pages back to the system. */
export interface NativeHeap {
  /** Releases free memory; resolves true when some was returned to the system. */
  trim(): Promise<boolean>;
  /** Unloads the library. */
  close(): void;
}

/** What {@link openGlibcHeap} found: the heap, or why it cannot be trimmed here. */
export type OpenedHeap = { heap: NativeHeap } | { unavailable: string };

/**
 * Where glibc's shared object is for a Deno `arch` (`x86_64`, `aarch64`): Debian's and Ubuntu's
 * multiarch folder, then Fedora's, then Arch's. Full paths, not the bare `libc.so.6`: Deno checks
 * a grant scoped to paths against the name passed to `dlopen`.
 */
export function glibcPaths(arch: string): string[] {
  return [
    `/lib/${arch}-linux-gnu/libc.so.6`,
    // Merged-/usr systems (Debian 12 and later, Ubuntu) map it from here, as /proc/<pid>/maps shows.
    `/usr/lib/${arch}-linux-gnu/libc.so.6`,
    "/lib64/libc.so.6",
    "/usr/lib/libc.so.6",
  ];
}

const SYMBOLS = {
  // Off the main thread: it takes the arenas' locks and walks their free lists.
  malloc_trim: { parameters: ["usize"], result: "i32", nonblocking: true },
} as const;

/**
 * The path of the glibc shared object mapped into the process whose `/proc/<pid>/maps` text is
 * `maps`, if one is (musl's is `ld-musl-*.so.1` and not matched).
 */
export function loadedGlibc(maps: string): string | undefined {
  for (const line of maps.split("\n")) {
    const path = line.trim().split(/\s+/).slice(5).join(" ");
    if (/\/libc\.so\.6$/.test(path)) return path;
  }
  return undefined;
}

/**
 * Binds glibc's `malloc_trim` in the C library `maps` (this process's `/proc/<pid>/maps`) shows
 * loaded, or says why it cannot (another OS, maps unreadable, no glibc, no permission).
 */
export function openGlibcHeap(maps: string | { unreadable: string }): OpenedHeap {
  if (Deno.build.os !== "linux") return { unavailable: `${Deno.build.os} has no glibc` };
  if (typeof maps !== "string") {
    return { unavailable: `cannot tell which C library is loaded: ${maps.unreadable}` };
  }
  const loaded = loadedGlibc(maps);
  if (!loaded) return { unavailable: "no glibc is loaded (another C library, such as musl)" };
  if (Deno.permissions.querySync({ name: "ffi", path: loaded }).state !== "granted") {
    return { unavailable: `no FFI permission for ${loaded}` };
  }
  try {
    const library = Deno.dlopen(loaded, SYMBOLS);
    return {
      heap: {
        trim: async () => await library.symbols.malloc_trim(0n) === 1,
        close: () => library.close(),
      },
    };
  } catch (err) {
    return { unavailable: `${loaded}: ${err instanceof Error ? err.message : err}` };
  }
}

/** Options of {@link trimPeriodically}. */
export interface TrimOptions {
  signal: AbortSignal;
  clock: Clock;
  /** Time between trims (default 10 s). */
  intervalMs?: number;
}

/** Trims `heap` every interval until the signal aborts; resolves then. */
export async function trimPeriodically(heap: NativeHeap, options: TrimOptions): Promise<void> {
  const { signal, clock, intervalMs = 10_000 } = options;
  while (!signal.aborted) {
    try {
      await clock.sleep(intervalMs, signal);
    } catch {
      return;
    }
    await heap.trim();
  }
}
