import assert from "node:assert/strict";
import {
  glibcPaths,
  loadedGlibc,
  type NativeHeap,
  openGlibcHeap,
  trimPeriodically,
} from "../../base/native_heap.ts";
import { FakeClock } from "../fakes/clock.ts";

const onGlibc = Deno.build.os === "linux" &&
  glibcPaths(Deno.build.arch).some((path) => {
    try {
      return Deno.statSync(path).isFile;
    } catch {
      return false;
    }
  });

/** This process's memory map, read by `cat` as main.ts reads it. */
async function ownMaps(): Promise<string> {
  const out = await new Deno.Command("cat", { args: [`/proc/${Deno.pid}/maps`] }).output();
  return new TextDecoder().decode(out.stdout);
}

/** This process's resident KiB. */
function residentKiB(): number {
  return Math.round(Deno.memoryUsage().rss / 1024);
}

Deno.test({
  name: "a trim gives the pages glibc's malloc freed below a live chunk back to the system",
  ignore: !onGlibc,
  fn: async () => {
    const maps = await ownMaps();
    const opened = openGlibcHeap(maps);
    assert.ok("heap" in opened, JSON.stringify(opened));
    const path = loadedGlibc(maps)!;
    const libc = Deno.dlopen(path, {
      malloc: { parameters: ["usize"], result: "pointer" },
      free: { parameters: ["pointer"], result: "void" },
    });
    try {
      // 80 MiB in chunks below the mmap threshold, all freed but the last: the top of the arena
      // stays in use, so free() alone cannot shrink it.
      const chunks = Array.from({ length: 10_000 }, () => {
        const chunk = libc.symbols.malloc(8192n)!;
        // Written to, so that its pages are resident.
        new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(chunk, 8192)).fill(1);
        return chunk;
      });
      const held = residentKiB();
      for (const chunk of chunks.slice(0, -1)) libc.symbols.free(chunk);
      const freed = residentKiB();
      assert.ok(freed > held - 8 * 1024, `free() alone kept the pages (${held} → ${freed} KiB)`);
      assert.equal(await opened.heap.trim(), true, "malloc_trim says it returned memory");
      const trimmed = residentKiB();
      assert.ok(
        trimmed < freed - 60 * 1024,
        `the trim returned at least 60 of the 80 MiB freed (${freed} → ${trimmed} KiB)`,
      );
      libc.symbols.free(chunks.at(-1)!);
    } finally {
      libc.close();
      opened.heap.close();
    }
  },
});

Deno.test({
  name: "without the FFI grant nothing is loaded and the reason names the path to grant",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const module = new URL("../../base/native_heap.ts", import.meta.url).href;
    const maps = `7f00-7f01 r-xp 00026000 fe:00 1   ${glibcPaths(Deno.build.arch)[0]}`;
    const script = `import { openGlibcHeap } from "${module}";\n` +
      `console.log(JSON.stringify(openGlibcHeap(${JSON.stringify(maps)})));\n`;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-prompt", "--allow-read", "-"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(script));
    await writer.close();
    const out = await child.output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const opened = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.match(
      opened.unavailable,
      new RegExp(`no FFI permission for ${glibcPaths(Deno.build.arch)[0]}`),
    );
  },
});

Deno.test("the glibc that the memory map shows is the one found; musl's loader is not glibc", () => {
  const maps = [
    "5581e000-5581f000 r--p 00000000 fe:00 1   /usr/bin/deno",
    "7fcc71b75000-7fcc71b9b000 r--p 00000000 fe:00 326269   /usr/lib/x86_64-linux-gnu/libc.so.6",
    "7fcc71d9b000-7fcc71d9c000 rw-p 00000000 00:00 0 ",
  ].join("\n");
  assert.equal(loadedGlibc(maps), "/usr/lib/x86_64-linux-gnu/libc.so.6");
  assert.equal(
    loadedGlibc("7f00-7f01 r-xp 00000000 fe:00 2   /lib/ld-musl-x86_64.so.1\n"),
    undefined,
  );
});

Deno.test({
  name: "only the C library the process has loaded is opened, never another one of the grant",
  ignore: !onGlibc,
  fn: () => {
    // A libc.so.6 the process has not loaded: nothing else from the grant's list is tried.
    const opened = openGlibcHeap("7f00-7f01 r-xp 00000000 fe:00 2   /opt/elsewhere/libc.so.6\n");
    assert.ok("unavailable" in opened, "a library was opened");
    assert.match(opened.unavailable, /\/opt\/elsewhere\/libc\.so\.6/);
    const unread = openGlibcHeap({ unreadable: "permission denied" });
    assert.ok("unavailable" in unread);
    assert.match(unread.unavailable, /cannot tell which C library is loaded: permission denied/);
  },
});

/** A heap that counts its trims. */
class CountingHeap implements NativeHeap {
  trims = 0;
  trim(): Promise<boolean> {
    this.trims++;
    return Promise.resolve(true);
  }
  close(): void {}
}

Deno.test("the heap is trimmed once every interval until the signal aborts", async () => {
  const clock = new FakeClock();
  const heap = new CountingHeap();
  const stop = new AbortController();
  const done = trimPeriodically(heap, { signal: stop.signal, clock, intervalMs: 10_000 });
  await clock.advance(9_999);
  assert.equal(heap.trims, 0, "no trim before the first interval has passed");
  await clock.advance(1);
  assert.equal(heap.trims, 1);
  await clock.advance(30_000);
  assert.equal(heap.trims, 4);
  stop.abort();
  await done;
  await clock.advance(60_000);
  assert.equal(heap.trims, 4, "no trim after the signal");
  assert.equal(clock.pending, 0, "no sleep left behind");
});
