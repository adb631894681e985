/**
 * The view's walk (providers/process/launch/safe_walk.ts) as root against a pod that swaps the
 * file it is about to open: a FIFO swapped in never leaves it waiting for a writer, and what it
 * holds in the end is a regular file or nothing.
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { WALK_FUNCTIONS } from "../../../providers/process/launch/safe_walk.ts";
import { toolPath } from "../../../providers/process/host/host_tools.ts";

const isRoot = Deno.uid() === 0;

Deno.test({
  name: "a FIFO raced in for a subPath file never blocks the walk, nor is it held",
  ignore: !isRoot,
  fn: async () => {
    const volume = await Deno.realPath(await Deno.makeTempDir({ prefix: "vk-walk-race-" }));
    await Deno.writeTextFile(join(volume, "regular"), "x");
    const mkfifo = await new Deno.Command(toolPath("mkfifo"), { args: [join(volume, "fifo")] })
      .output();
    assert.ok(mkfifo.success);
    // The pod's process: swaps volume/f between the regular file and the FIFO, as fast as it can.
    const flip =
      `const [r, p, f] = Deno.args; for (;;) for (const [a, b] of [[r, f], [f, r], [p, f], [f, p]]) { try { Deno.renameSync(a, b); } catch { /* raced */ } }`;
    const flipper = new Deno.Command(Deno.execPath(), {
      args: ["eval", flip, ...["regular", "fifo", "f"].map((n) => join(volume, n))],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const script = [
      "set -e",
      "exec 4>/dev/null",
      "VK_DEV_MOUNTS=/dev",
      ...WALK_FUNCTIONS,
      'i=0; while [ "$i" -lt 500 ]; do',
      '  (vk_walk "$1" f none ""; if [ -p /proc/self/fd/7 ]; then echo fifo; else echo held; fi) 2>&4 || echo refused',
      "  i=$((i + 1))",
      "done",
    ].join("\n");
    // A group of its own: a walk blocked in a subshell goes with it.
    const walk = new Deno.Command(toolPath("unshare"), {
      args: ["-m", "--propagation", "private", "--", toolPath("sh"), "-c", script, "sh", volume],
      stdout: "piped",
      stderr: "null",
      detached: true,
    }).spawn();
    const timer = setTimeout(() => Deno.kill(-walk.pid, "SIGKILL"), 45_000);
    try {
      const [status, out] = await Promise.all([walk.status, new Response(walk.stdout).text()]);
      const counts = { held: 0, refused: 0, fifo: 0 };
      for (const line of out.split("\n").filter(Boolean)) counts[line as keyof typeof counts]++;
      assert.equal(
        status.signal,
        null,
        `the walk blocked (killed after 45 s): ${JSON.stringify(counts)}`,
      );
      assert.equal(counts.fifo, 0);
      assert.equal(counts.held + counts.refused, 500, out);
    } finally {
      clearTimeout(timer);
      flipper.kill("SIGKILL");
      await flipper.status;
      await Deno.remove(volume, { recursive: true });
    }
  },
});
