/**
 * Start-up's first layer against inherited descriptors (providers/process/launch/inherited_fds.ts):
 * a descriptor without close-on-exec, as an inherited one is, is found and marked.
 * @module
 */
import assert from "node:assert/strict";
import {
  closeInheritedOnExec,
  inheritableFds,
} from "../../../providers/process/launch/inherited_fds.ts";

Deno.test({
  name: "an inherited descriptor is found and marked close-on-exec, nothing else touched",
  ignore: Deno.build.os !== "linux",
  fn: () => {
    const maps = Deno.readTextFileSync("/proc/self/maps");
    const libc = /\S*\/libc\.so\.6$/m.exec(maps)?.[0];
    if (!libc) return; // not glibc: the FFI path is tried on its own C library
    const c = Deno.dlopen(libc, {
      dup: { parameters: ["i32"], result: "i32" },
      close: { parameters: ["i32"], result: "i32" },
    });
    // dup() gives a descriptor without close-on-exec, as an inherited one is.
    const fd = c.symbols.dup(2);
    try {
      assert.ok(inheritableFds().some((f) => f.fd === fd), "dup's fd would be inherited");
      const result = closeInheritedOnExec();
      assert.ok(result.marked.includes(fd));
      assert.deepEqual(result.left, []);
      assert.equal(result.warning, undefined);
      assert.deepEqual(inheritableFds(), []);
    } finally {
      c.symbols.close(fd);
      c.close();
    }
  },
});
