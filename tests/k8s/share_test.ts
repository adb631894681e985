import assert from "node:assert/strict";
import { shareUnchanged } from "../../k8s/watch/share.ts";

const pod = (resourceVersion: string, phase: string) => ({
  metadata: { name: "web", resourceVersion, labels: { app: "web" } },
  spec: { containers: [{ name: "app", image: "nginx", ports: [{ containerPort: 80 }] }] },
  status: { phase, conditions: [{ type: "Ready", status: "True" }] },
});

Deno.test("a new version keeps the previous version's unchanged parts, and only those", () => {
  const before = pod("1", "Pending");
  const after = shareUnchanged(before, pod("2", "Running"));
  assert.notEqual(after, before);
  assert.equal(after.spec, before.spec, "an unchanged spec is the same object");
  assert.equal(after.metadata.labels, before.metadata.labels);
  assert.equal(after.status.conditions, before.status.conditions);
  assert.notEqual(after.metadata, before.metadata, "resourceVersion changed");
  assert.notEqual(after.status, before.status, "phase changed");
  assert.deepEqual(after, pod("2", "Running"), "the values are the new version's");
  assert.deepEqual(before, pod("1", "Pending"), "the previous version is left as it was");
});

Deno.test("equal versions give the previous object; added, removed and retyped parts do not", () => {
  const before = pod("1", "Running");
  assert.equal(shareUnchanged(before, pod("1", "Running")), before);

  const grown = pod("1", "Running") as ReturnType<typeof pod> & { extra?: string[] };
  grown.spec.containers.push({ name: "side", image: "busybox", ports: [] });
  const shared = shareUnchanged(before, grown);
  assert.notEqual(shared.spec.containers, before.spec.containers, "a longer list is new");
  assert.equal(shared.spec.containers[0], before.spec.containers[0]);
  assert.equal(shared.spec.containers.length, 2);

  const fewer = { metadata: before.metadata, spec: before.spec };
  assert.notEqual(shareUnchanged(before, fewer), before, "a removed key makes a new object");

  const retyped = { ...pod("1", "Running"), spec: [] as unknown };
  assert.deepEqual(shareUnchanged(before, retyped).spec, []);
});

Deno.test("a frozen new version is returned untouched", () => {
  const next = Object.freeze(pod("2", "Running"));
  assert.equal(shareUnchanged(pod("1", "Running"), next), next);
});
