import assert from "node:assert/strict";
import { FakeClock } from "../../fakes/clock.ts";
import { BuildProgress, forEachLine } from "../../../tools/cluster/build_progress.ts";

Deno.test("the control-plane build prints its step and the elapsed time every 30 s", async () => {
  const clock = new FakeClock();
  const printed: string[] = [];
  const progress = new BuildProgress({ clock, print: (line) => printed.push(line) });
  const stop = new AbortController();
  const running = progress.run(stop.signal);
  try {
    await clock.advance(29_000);
    assert.deepEqual(printed, [], "nothing before the first 30 s");
    await clock.advance(1_000);
    assert.deepEqual(printed, ["  30s elapsed: resolving Go modules"]);
    progress.line("go: downloading k8s.io/kubernetes v1.35.0");
    progress.line("go: downloading go.etcd.io/etcd/server/v3 v3.6.5");
    await clock.advance(30_000);
    progress.line("internal/goarch");
    progress.line("k8s.io/apiserver/pkg/server");
    progress.line("./cmd/k8s/main.go:12:2: undefined: run");
    await clock.advance(30_000);
    assert.deepEqual(printed.slice(1), [
      "  step: downloading Go modules",
      "  1m elapsed: downloading Go modules (2 modules downloaded)",
      "  step: compiling",
      "./cmd/k8s/main.go:12:2: undefined: run",
      "  1m30s elapsed: compiling (2 modules downloaded, 2 packages compiled, last k8s.io/apiserver/pkg/server)",
    ]);
  } finally {
    stop.abort();
    await running;
  }
  await clock.advance(60_000);
  assert.equal(printed.length, 6, "nothing after it is stopped");
});

Deno.test("go's stderr is split into lines, the last one without a newline too", async () => {
  const bytes = new TextEncoder().encode("a/b\r\nc/d\npartial");
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.slice(0, 5));
      controller.enqueue(bytes.slice(5));
      controller.close();
    },
  });
  const lines: string[] = [];
  await forEachLine(stream, (line) => lines.push(line));
  assert.deepEqual(lines, ["a/b", "c/d", "partial"]);
});
