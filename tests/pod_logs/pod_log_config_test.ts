import assert from "node:assert/strict";
import { podLogDirOf, resolvePodLogDir } from "../../app/config/pod_logs.ts";
import { configSchema } from "../../app/config/schema.ts";
import { FakeClock } from "../../base/fake_clock.ts";

const quiet = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };

Deno.test("the rotation flags default to the kubelet's 10Mi and 5 files", () => {
  const config = configSchema.parse({ provider: "mock" });
  assert.equal(config.containerLogMaxSize, "10Mi");
  assert.equal(config.containerLogMaxFiles, 5);
  const dir = podLogDirOf("/tmp/x/pods", config, { nodeName: "n", clock: new FakeClock() });
  assert.equal(dir.options.maxBytes, 10 * 1024 * 1024);
  assert.equal(dir.options.linkDir, "/tmp/x/containers");
});

Deno.test("a wrong rotation size or file count is refused naming the field", () => {
  const bad = configSchema.safeParse({
    provider: "mock",
    containerLogMaxSize: "ten megs",
    containerLogMaxFiles: 1,
  });
  assert.equal(bad.success, false);
  const text = JSON.stringify(bad.error?.issues);
  assert.match(text, /containerLogMaxSize/);
  assert.match(text, /is not a size/);
  assert.match(text, /containerLogMaxFiles/);
});

Deno.test("--pod-log-dir none turns the logs off; a given directory is taken as it is", async () => {
  assert.equal(await resolvePodLogDir({ podLogDir: "none" }, {}, quiet), undefined);
  assert.equal(await resolvePodLogDir({ podLogDir: "/srv/logs" }, {}, quiet), "/srv/logs");
});
