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
 * elsewhere {@link openGlibcHeap} says why not and nothing is trimmed.
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
  return [`/lib/${arch}-linux-gnu/libc.so.6`, "/lib64/libc.so.6", "/usr/lib/libc.so.6"];
}

const SYMBOLS = {
  // Off the main thread: it takes the arenas' locks and walks their free lists.
  malloc_trim: { parameters: ["usize"], result: "i32", nonblocking: true },
} as const;

/** Binds glibc's `malloc_trim`, or says why it cannot (another OS, no glibc, no permission). */
export function openGlibcHeap(): OpenedHeap {
  if (Deno.build.os !== "linux") return { unavailable: `${Deno.build.os} has no glibc` };
  const problems: string[] = [];
  for (const path of glibcPaths(Deno.build.arch)) {
    if (Deno.permissions.querySync({ name: "ffi", path }).state !== "granted") {
      problems.push(`no FFI permission for ${path}`);
      continue;
    }
    let library: Deno.DynamicLibrary<typeof SYMBOLS>;
    try {
      library = Deno.dlopen(path, SYMBOLS);
    } catch (err) {
      // Not there, or a C library without malloc_trim (musl).
      problems.push(`${path}: ${err instanceof Error ? err.message : err}`);
      continue;
    }
    return {
      heap: {
        trim: async () => await library.symbols.malloc_trim(0n) === 1,
        close: () => library.close(),
      },
    };
  }
  return { unavailable: problems.join("; ") };
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
