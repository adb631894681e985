import assert from "node:assert/strict";
import { checkSource, checkTree } from "../../scripts/check_layers.ts";

const whys = (file: string, source: string) => checkSource(file, source).map((v) => v.why);

Deno.test("the tree as committed keeps its layers", async () => {
  const root = new URL("../../", import.meta.url).pathname;
  assert.deepEqual(await checkTree(root), []);
});

Deno.test("an import up a layer is refused, one down is not", () => {
  assert.deepEqual(whys("k8s/client.ts", 'import { x } from "../core/pods/mod.ts";'), [
    "k8s/ (layer 2) imports up to core",
  ]);
  assert.deepEqual(whys("core/pods/a.ts", 'import { x } from "../../k8s/mod.ts";'), []);
});

Deno.test("core's subfolders never import each other; files directly in core/ are shared", () => {
  assert.match(
    whys("core/pods/a.ts", 'import { x } from "../node/mod.ts";')[0],
    /core\/pods imports its sibling core\/node/,
  );
  assert.match(
    whys("core/kubelet_api/a.ts", 'import type { x } from "../pods/pod_state.ts";')[0],
    /core\/kubelet_api imports its sibling core\/pods/,
  );
  assert.deepEqual(whys("core/kubelet_api/a.ts", 'import { x } from "../metrics.ts";'), []);
  assert.deepEqual(whys("core/pods/a.ts", 'import { x } from "./b.ts";'), []);
});

Deno.test("a built-in provider imports only the kit, and no other provider", () => {
  assert.deepEqual(whys("providers/mock/a.ts", 'import { x } from "../../provider/mod.ts";'), []);
  assert.match(
    whys("providers/mock/a.ts", 'import type { Clock } from "../../base/clock.ts";')[0],
    /providers\/mock imports only the kit/,
  );
  assert.match(
    whys("providers/fargate/a.ts", 'import { KubeClient } from "../../k8s/mod.ts";')[0],
    /providers\/fargate imports only the kit/,
  );
  assert.match(
    whys("providers/process/a.ts", 'import { x } from "../mock/mod.ts";')[0],
    /providers\/process imports its sibling providers\/mock/,
  );
});

Deno.test("the kubernetes provider's named exceptions are k8s/, and spdy/ in streaming/", () => {
  assert.deepEqual(whys("providers/kubernetes/a.ts", 'import { x } from "../../k8s/mod.ts";'), []);
  assert.deepEqual(
    whys("providers/kubernetes/node/a.ts", 'import { x } from "../../../k8s/mod.ts";'),
    [],
  );
  assert.deepEqual(
    whys("providers/kubernetes/streaming/a.ts", 'import { x } from "../../../spdy/session.ts";'),
    [],
  );
  assert.match(
    whys("providers/kubernetes/status/a.ts", 'import { x } from "../../../spdy/session.ts";')[0],
    /imports only the kit/,
  );
  assert.match(
    whys("providers/kubernetes/a.ts", 'import { x } from "../../base/log.ts";')[0],
    /imports only the kit/,
  );
});

Deno.test("an example imports only the kit; tools/ never imports tests/ or bench/", () => {
  assert.match(whys("examples/a.ts", 'import { x } from "../k8s/mod.ts";')[0], /only the kit/);
  assert.match(
    whys("tools/harness/a.ts", 'import { x } from "../../tests/fakes/clock.ts";')[0],
    /tools\/ is shared/,
  );
  assert.deepEqual(whys("tools/harness/a.ts", 'import { x } from "../../core/mod.ts";'), []);
});

Deno.test("the bench imports no test file; what it shares with tests is in tools/", () => {
  assert.match(
    whys("bench/scenarios/a.ts", 'import { x } from "../../tests/providers/eci/_e.ts";')[0],
    /bench\/ imports no test file/,
  );
  assert.deepEqual(
    whys("bench/scenarios/a.ts", 'import { x } from "../../tools/harness/eci/emulator.ts";'),
    [],
  );
  assert.deepEqual(whys("bench/run.ts", 'import { x } from "../app/run.ts";'), []);
});
