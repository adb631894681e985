/**
 * An attach session's output starts where the step's log ended before the session's input was
 * sent: a step that answers at once (a fake here, on the real files: it appends a stamped line
 * to the log as soon as the stdin file grows) never has its answer taken for earlier output.
 * Under CI load the real step once answered before the session's first read of the log, and the
 * answer was skipped with what came before.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { attachToStep, stepTarget } from "../../../providers/slurm/streams/attach.ts";
import { parseSlurmConfig } from "../../../providers/slurm/config.ts";
import { podDirOf } from "../../../providers/slurm/request/pod_dir.ts";
import type { SlurmHandle } from "../../../providers/slurm/status.ts";

Deno.test("an answer sent at once is the session's, never skipped as earlier output", async () => {
  const sharedDir = await Deno.makeTempDir();
  const parsed = parseSlurmConfig({ cli: {}, sharedDir });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const config = parsed.config;
  const pod: Pod = {
    metadata: { namespace: "ns", name: "talk", uid: "u-1" },
    spec: { containers: [{ name: "echo", image: "busybox", stdin: true }] },
  };
  const handle: SlurmHandle = {
    run: 0,
    jobId: 7,
    job: {
      id: 7,
      state: "RUNNING",
      reason: "None",
      comment: "",
      exitStatus: 0,
      startMs: 1,
      endMs: 0,
    },
    files: new Map([["echo", { startedMs: Date.now() }]]),
  };
  const dir = podDirOf(config, pod);
  await Deno.mkdir(`${dir}/logs`, { recursive: true });
  await Deno.mkdir(`${dir}/stdin`, { recursive: true });
  const log = `${dir}/logs/echo.0.log`;
  const stdinFile = `${dir}/stdin/echo.0`;
  await Deno.writeTextFile(log, `${(Date.now() / 1000).toFixed(6)} earlier output\n`);
  // The fake step: every new line on its stdin is answered in the log at once.
  const stop = new AbortController();
  const step = (async () => {
    let seen = 0;
    while (!stop.signal.aborted) {
      const text = await Deno.readTextFile(stdinFile).catch(() => "");
      for (const line of text.slice(seen).split("\n").slice(0, -1)) {
        await Deno.writeTextFile(log, `${(Date.now() / 1000).toFixed(6)} got ${line}\n`, {
          append: true,
        });
      }
      seen = text.lastIndexOf("\n") + 1; // an unfinished last line is read again
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  try {
    for (let i = 0; i < 20; i++) {
      const target = stepTarget(pod, handle, "echo", config, realClock);
      const chunks: string[] = [];
      const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
      const writer = writable.getWriter();
      const session = attachToStep(target, {
        stdin: readable,
        stdout: new WritableStream({ write: (c) => void chunks.push(new TextDecoder().decode(c)) }),
        tty: false,
      }, AbortSignal.timeout(10_000));
      await writer.write(new TextEncoder().encode(`line ${i}\n`));
      const deadline = Date.now() + 5_000;
      while (!chunks.join("").includes(`got line ${i}\n`) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 5));
      }
      await writer.close();
      await session;
      assert.equal(chunks.join(""), `got line ${i}\n`, `session ${i} saw its own answer only`);
    }
  } finally {
    stop.abort();
    await step;
    await Deno.remove(sharedDir, { recursive: true });
  }
});
