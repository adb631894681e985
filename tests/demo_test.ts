/**
 * The demo stopped as a terminal's Ctrl-C stops it (SIGINT to its whole process group) leaves
 * no pod process behind. It runs on a cluster of its own (started and stopped by the demo),
 * never the shared one.
 */
import assert from "node:assert/strict";
import { killMarkedProcesses } from "../tools/harness/processes.ts";

const demo = new URL("../demo.ts", import.meta.url).pathname;
const cli = new URL("../tools/cluster/cli.ts", import.meta.url).pathname;
const CLUSTER = "demo-ctrl-c";

/** Pids of processes whose environment says they are the demo's pods. */
function demoPodProcesses(): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const env = Deno.readTextFileSync(`/proc/${entry.name}/environ`).split("\0");
      if (env.includes("NODE_NAME=vk-demo") && env.some((e) => e.startsWith("POD_NAME=hello-"))) {
        found.push(Number(entry.name));
      }
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

async function readUntil(
  stream: ReadableStream<string>,
  marker: string,
  timeoutMs: number,
): Promise<string> {
  let output = "";
  const reader = stream.getReader();
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    while (!output.includes(marker)) {
      const next = await Promise.race([
        reader.read(),
        new Promise<never>((_, reject) =>
          timeout.addEventListener("abort", () => reject(new Error(`no "${marker}":\n${output}`)))
        ),
      ]);
      if (next.done) throw new Error(`the demo ended before "${marker}":\n${output}`);
      output += next.value;
    }
    return output;
  } finally {
    reader.releaseLock();
  }
}

Deno.test({
  name: "Ctrl-C on the demo (SIGINT to its process group) leaves no pod process running",
  // A cluster of its own: minutes on a loaded machine.
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    assert.deepEqual(demoPodProcesses(), [], "no demo pods before the test");
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", demo, "--provider=process", `--cluster=${CLUSTER}`],
      env: { NO_COLOR: "1" },
      // Its own process group, as a shell gives a foreground job.
      detached: true,
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const stdout = child.stdout.pipeThrough(new TextDecoderStream());
    try {
      await readUntil(stdout, "Press Ctrl-C", 300_000);
      const pods = demoPodProcesses();
      assert.ok(pods.length > 0, "the demo's pod runs as local processes");
      Deno.kill(-child.pid, "SIGINT");
      const rest = stdout.pipeTo(new WritableStream());
      const status = await child.status;
      await rest;
      assert.equal(status.code, 0);
      assert.deepEqual(demoPodProcesses(), [], "every pod process has stopped");
    } finally {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await child.status;
      // A demo that died left its vkubelet (its own process group) and pods running.
      await killMarkedProcesses({ cmdline: `/cluster-${CLUSTER}/` });
      for (const pid of demoPodProcesses()) Deno.kill(pid, "SIGKILL");
      // Stop the private cluster if the demo did not get to it.
      await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", cli, `--name=${CLUSTER}`, "down"],
        stdout: "null",
        stderr: "null",
      }).output();
    }
  },
});
