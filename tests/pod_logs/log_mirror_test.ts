import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../base/clock.ts";
import type { ContainerLogOptions, ContainerRef, Logger } from "../../provider/mod.ts";
import { LogMirror } from "../../provider/log_mirror.ts";
import { PodLogDir, readContainerLog } from "../../provider/mod.ts";
import { eventually } from "../../tools/harness/wait.ts";

const quiet: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };
const dec = new TextDecoder();

/** A backend's log API: per container instance, lines with times; follow polls. */
class FakeBackend {
  instances = new Map<string, { time: number; text: string }[][]>();
  down = false;
  calls = 0;
  open = 0;
  maxOpen = 0;

  add(container: string, instance: number, text: string, time = Date.now()) {
    const runs = this.instances.get(container) ?? [];
    (runs[instance] ??= []).push({ time, text });
    this.instances.set(container, runs);
  }

  logs = (ref: ContainerRef, o: ContainerLogOptions): Promise<ReadableStream<Uint8Array>> => {
    this.calls++;
    if (this.down) return Promise.reject(new Error("backend unreachable"));
    const runs = this.instances.get(ref.container) ?? [];
    const n = runs.length - 1 - (o.previous ? 1 : 0);
    const since = o.sinceTime?.getTime() ?? 0;
    let sent = 0;
    this.open++;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    let closed = false;
    const finish = () => !closed && (closed = true, this.open--);
    return Promise.resolve(
      new ReadableStream<Uint8Array>({
        pull: async (controller) => {
          while (true) {
            if (o.signal?.aborted || this.down) {
              finish();
              return controller.error(new Error("stream broken"));
            }
            const lines = (runs[n] ?? []).slice(sent).filter((l) => l.time >= since);
            sent = (runs[n] ?? []).length;
            if (lines.length) {
              const text = lines.map((l) =>
                `${new Date(l.time).toISOString().replace("Z", "000000Z")} ${l.text}\n`
              ).join("");
              return controller.enqueue(new TextEncoder().encode(text));
            }
            if (!o.follow) {
              finish();
              return controller.close();
            }
            await new Promise((r) => setTimeout(r, 20));
          }
        },
        cancel: () => void finish(),
      }),
    );
  };
}

function pod(restarts: Record<string, number>, running = true): Pod {
  return {
    metadata: { namespace: "ns", name: "job", uid: "1234-abcd" },
    status: {
      containerStatuses: Object.entries(restarts).map(([name, restartCount]) => ({
        name,
        image: "x",
        imageID: "",
        ready: running,
        restartCount,
        state: running ? { running: {} } : { terminated: { exitCode: 0 } },
      })),
    },
  };
}

async function withMirror(
  fn: (ctx: { dir: PodLogDir; root: string; backend: FakeBackend }) => Promise<void>,
  maxStreams = 10,
) {
  const root = await Deno.makeTempDir({ prefix: "vk-mirror-" });
  const dir = new PodLogDir({
    dir: `${root}/pods`,
    linkDir: `${root}/containers`,
    maxBytes: 10 << 20,
    maxFiles: 5,
    clock: realClock,
    nodeName: "n",
    maxStreams,
  });
  try {
    await fn({ dir, root, backend: new FakeBackend() });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

function mirrorOf(dir: PodLogDir, backend: FakeBackend, turnMs = 30_000) {
  return new LogMirror({
    dir,
    logs: backend.logs,
    clock: realClock,
    log: quiet,
    retryMs: 50,
    turnMs,
  });
}

async function texts(dir: PodLogDir, container: string, restartCount: number): Promise<string[]> {
  const path = dir.logPath({
    namespace: "ns",
    pod: "job",
    uid: "1234-abcd",
    container,
    restartCount,
  });
  return (await readContainerLog(path)).map((r) => dec.decode(r.text));
}

Deno.test("a remote container's lines are mirrored once and in order, with the backend's times", async () => {
  await withMirror(async ({ dir, backend }) => {
    const t0 = Date.now();
    backend.add("app", 0, "one", t0);
    backend.add("app", 0, "two", t0); // the same millisecond: told apart by count
    const mirror = mirrorOf(dir, backend);
    mirror.observe(pod({ app: 0 }));
    backend.add("app", 0, "three", t0 + 1);
    await eventually(
      "three lines",
      async () => (await texts(dir, "app", 0)).length === 3,
      5000,
      20,
    );
    await mirror.close();
    const records = await readContainerLog(dir.logPath({
      namespace: "ns",
      pod: "job",
      uid: "1234-abcd",
      container: "app",
      restartCount: 0,
    }));
    assert.equal(records[0].time, new Date(t0).toISOString().replace("Z", "000000Z"));
    assert.deepEqual(await texts(dir, "app", 0), ["one", "two", "three"]);
  });
});

Deno.test("after vkubelet's restart the mirror resumes after the last line written, no line twice", async () => {
  await withMirror(async ({ dir, backend }) => {
    const t0 = Date.now() - 1000;
    for (let i = 0; i < 4; i++) backend.add("app", 0, `line ${i}`, t0 + Math.floor(i / 2));
    const first = mirrorOf(dir, backend);
    first.observe(pod({ app: 0 }));
    await eventually("four lines", async () => (await texts(dir, "app", 0)).length === 4, 5000, 20);
    await first.close();
    // Lines while vkubelet was away, one of them at the time of the last line written.
    backend.add("app", 0, "line 4", t0 + 1);
    backend.add("app", 0, "line 5", t0 + 2);
    const second = mirrorOf(dir, backend);
    second.observe(pod({ app: 0 }));
    await eventually("six lines", async () => (await texts(dir, "app", 0)).length >= 6, 5000, 20);
    await new Promise((r) => setTimeout(r, 200));
    await second.close();
    assert.deepEqual(await texts(dir, "app", 0), [0, 1, 2, 3, 4, 5].map((i) => `line ${i}`));
  });
});

Deno.test("lines written during a backend outage are caught up when it answers again", async () => {
  await withMirror(async ({ dir, backend }) => {
    backend.add("app", 0, "before");
    const mirror = mirrorOf(dir, backend);
    mirror.observe(pod({ app: 0 }));
    await eventually("first line", async () => (await texts(dir, "app", 0)).length === 1, 5000, 20);
    backend.down = true;
    await new Promise((r) => setTimeout(r, 150));
    backend.add("app", 0, "during", Date.now());
    await new Promise((r) => setTimeout(r, 150));
    backend.down = false;
    backend.add("app", 0, "after", Date.now());
    await eventually("caught up", async () => (await texts(dir, "app", 0)).length === 3, 5000, 20);
    await mirror.close();
    assert.deepEqual(await texts(dir, "app", 0), ["before", "during", "after"]);
  });
});

Deno.test("a container's restart starts <n+1>.log after <n>.log is read to its end", async () => {
  await withMirror(async ({ dir, backend }) => {
    backend.add("app", 0, "first run");
    const mirror = mirrorOf(dir, backend);
    mirror.observe(pod({ app: 0 }));
    await eventually("0.log", async () => (await texts(dir, "app", 0)).length === 1, 5000, 20);
    backend.add("app", 0, "last words"); // written as the run ended
    backend.add("app", 1, "second run");
    mirror.observe(pod({ app: 1 }));
    await eventually("1.log", async () => (await texts(dir, "app", 1)).length === 1, 5000, 20);
    await eventually(
      "0.log drained",
      async () => (await texts(dir, "app", 0)).length === 2,
      5000,
      20,
    );
    await mirror.close();
    assert.deepEqual(await texts(dir, "app", 0), ["first run", "last words"]);
    assert.deepEqual(await texts(dir, "app", 1), ["second run"]);
  });
});

Deno.test("no more than maxStreams logs are followed at once, and every container gets its turn", async () => {
  await withMirror(async ({ dir, backend }) => {
    for (const c of ["a", "b", "c"]) backend.add(c, 0, `${c} 1`);
    const mirror = mirrorOf(dir, backend, 100);
    mirror.observe(pod({ a: 0, b: 0, c: 0 }));
    await eventually(
      "every container's line",
      async () => {
        const all = await Promise.all(["a", "b", "c"].map((c) => texts(dir, c, 0)));
        return all.every((t) => t.length === 1);
      },
      5000,
      20,
    );
    for (const c of ["a", "b", "c"]) backend.add(c, 0, `${c} 2`);
    await eventually(
      "every container's second line",
      async () => {
        const all = await Promise.all(["a", "b", "c"].map((c) => texts(dir, c, 0)));
        return all.every((t) => t.length === 2);
      },
      5000,
      20,
    );
    await mirror.close();
    assert.equal(backend.maxOpen, 1);
    assert.deepEqual(await texts(dir, "b", 0), ["b 1", "b 2"]);
  }, 1);
});

Deno.test("a gone pod's followers stop and its log directory is removed", async () => {
  await withMirror(async ({ dir, backend, root }) => {
    backend.add("app", 0, "x");
    const mirror = mirrorOf(dir, backend);
    const p = pod({ app: 0 });
    mirror.observe(p);
    await eventually("line", async () => (await texts(dir, "app", 0)).length === 1, 5000, 20);
    await mirror.forget(p);
    await assert.rejects(Deno.stat(`${root}/pods/ns_job_1234-abcd`), Deno.errors.NotFound);
    await mirror.close();
  });
});

Deno.test("an instance that ran and ended between two status pushes is still mirrored to <n>.log", async () => {
  await withMirror(async ({ dir, backend }) => {
    backend.add("app", 0, "quick run");
    backend.add("app", 1, "second run");
    const mirror = mirrorOf(dir, backend);
    // The first status the mirror sees is already the second instance's.
    mirror.observe(pod({ app: 1 }));
    await eventually("1.log", async () => (await texts(dir, "app", 1)).length === 1, 5000, 20);
    await eventually("0.log", async () => (await texts(dir, "app", 0)).length === 1, 5000, 20);
    await mirror.close();
    assert.deepEqual(await texts(dir, "app", 0), ["quick run"]);
  });
});

Deno.test("a restart while vkubelet was away: <n>.log gets the lines written after it stopped, once", async () => {
  await withMirror(async ({ dir, backend }) => {
    backend.add("app", 0, "first run");
    const first = mirrorOf(dir, backend);
    first.observe(pod({ app: 0 }));
    await eventually("0.log", async () => (await texts(dir, "app", 0)).length === 1, 5000, 20);
    await first.close();
    backend.add("app", 0, "last words"); // while vkubelet was away, then the restart
    backend.add("app", 1, "second run");
    const second = mirrorOf(dir, backend);
    second.observe(pod({ app: 1 }));
    await eventually(
      "0.log drained",
      async () => (await texts(dir, "app", 0)).length >= 2,
      5000,
      20,
    );
    await eventually("1.log", async () => (await texts(dir, "app", 1)).length === 1, 5000, 20);
    await new Promise((r) => setTimeout(r, 200));
    await second.close();
    assert.deepEqual(await texts(dir, "app", 0), ["first run", "last words"]);
  });
});

Deno.test("lines a backend's follow gives again (its cursor slipped back) are written once", async () => {
  await withMirror(async ({ dir, backend }) => {
    const t0 = Date.now() - 10_000;
    for (let i = 1; i <= 5; i++) backend.add("app", 0, `line ${i}`, t0 + i);
    const replaying = (ref: ContainerRef, o: ContainerLogOptions) => {
      // As a polled log whose next page starts from an index into another query's results: the
      // lines so far, then lines 2..5 again, then whatever the stream has next.
      const again = backend.instances.get("app")![0].slice(1, 5).map((l) =>
        `${new Date(l.time).toISOString().replace("Z", "000000Z")} ${l.text}\n`
      ).join("");
      return backend.logs(ref, o).then((s) =>
        s.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, c) {
              c.enqueue(chunk);
              if (new TextDecoder().decode(chunk).includes("line 5")) {
                c.enqueue(new TextEncoder().encode(again));
              }
            },
          }),
        )
      );
    };
    const mirror = new LogMirror({ dir, logs: replaying, clock: realClock, log: quiet });
    mirror.observe(pod({ app: 0 }));
    await eventually("five lines", async () => (await texts(dir, "app", 0)).length >= 5, 5000, 20);
    backend.add("app", 0, "line 6", t0 + 6);
    await eventually(
      "line 6",
      async () => (await texts(dir, "app", 0)).includes("line 6"),
      5000,
      20,
    );
    await mirror.close();
    assert.deepEqual(await texts(dir, "app", 0), [1, 2, 3, 4, 5, 6].map((i) => `line ${i}`));
  });
});
