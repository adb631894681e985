import assert from "node:assert/strict";
import { internPodParts, SharedParts } from "../../k8s/watch/intern.ts";

/** A pod of a ReplicaSet's template, as the watch parses it: every part its own object. */
const replica = (name: string, image = "nginx:1.27") => ({
  metadata: {
    name,
    uid: `uid-${name}`,
    labels: { app: "web", "pod-template-hash": "5d8f" },
    ownerReferences: [{ kind: "ReplicaSet", name: "web-5d8f", uid: "rs-1", controller: true }],
  },
  spec: {
    containers: [{ name: "app", image, resources: { requests: { cpu: "10m" } } }],
    tolerations: [{ key: "node.kubernetes.io/not-ready", operator: "Exists" }],
  },
  status: {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-12-02T07:00:00Z" }],
    hostIPs: [{ ip: "127.0.0.1" }],
    podIP: `127.0.1.${name.length}`,
  },
});

Deno.test("replicas of one template share their spec, labels and owner references", () => {
  const parts = new SharedParts();
  const a = internPodParts(replica("web-a"), parts);
  const b = internPodParts(replica("web-b"), parts);
  assert.equal(b.spec, a.spec, "one spec object for both");
  assert.equal(b.metadata.labels, a.metadata.labels);
  assert.equal(b.metadata.ownerReferences, a.metadata.ownerReferences);
  assert.notEqual(b.metadata, a.metadata, "names and uids stay each pod's own");
  assert.equal(b.status.conditions, a.status.conditions, "conditions of the same second");
  assert.equal(b.status.hostIPs, a.status.hostIPs);
  assert.notEqual(b.status, a.status, "the status as a whole is each pod's own");
  assert.deepEqual(a, replica("web-a"), "values are unchanged");
  assert.deepEqual(b, replica("web-b"));
});

Deno.test("a pod that differs in one part shares the others", () => {
  const parts = new SharedParts();
  const a = internPodParts(replica("web-a"), parts);
  const c = internPodParts(replica("web-c", "nginx:1.28"), parts);
  assert.notEqual(c.spec, a.spec);
  assert.notEqual(c.spec.containers[0], a.spec.containers[0]);
  assert.equal(c.spec.tolerations, a.spec.tolerations);
  assert.equal(c.spec.containers[0].resources, a.spec.containers[0].resources);
  assert.equal(c.spec.containers[0].image, "nginx:1.28");
});

Deno.test("shared parts are frozen: a holder cannot change them for every pod", () => {
  const parts = new SharedParts();
  const a = internPodParts(replica("web-a"), parts);
  const b = internPodParts(replica("web-b"), parts);
  assert.throws(() => {
    (b.spec.containers[0] as { image: string }).image = "evil";
  }, TypeError);
  assert.throws(() => b.spec.tolerations.push({ key: "x", operator: "Exists" }), TypeError);
  assert.equal(a.spec.containers[0].image, "nginx:1.27");
});

Deno.test("parts that are the previous version's own are left to their holder", () => {
  const parts = new SharedParts();
  internPodParts(replica("web-a"), parts);
  // What this process wrote (the informer's expected version) shares its status parts with the
  // next version: they stay the writer's, unfrozen and not swapped for another pod's.
  const written = replica("web-b");
  const next = { ...replica("web-b"), status: { ...written.status } };
  const shared = internPodParts(next, parts, written);
  assert.equal(shared.status.conditions, written.status.conditions);
  assert.ok(!Object.isFrozen(written.status.conditions));
  assert.notEqual(shared.spec, written.spec, "a part that changed is shared");
});

Deno.test("parts that differ only in key order are not taken for equal", () => {
  const parts = new SharedParts();
  const one = parts.intern({ a: 1, b: 2 });
  const other = parts.intern({ b: 2, a: 1 });
  assert.notEqual(other, one);
  assert.deepEqual(other, { b: 2, a: 1 });
});

Deno.test("the table stays bounded, and parts in use outlive those seen once", () => {
  const parts = new SharedParts(64);
  const template = parts.intern({ containers: [{ name: "app", image: "nginx" }] });
  for (let i = 0; i < 1_000; i++) {
    parts.intern({ volumes: [{ name: `kube-api-access-${i}` }] });
    // Another replica arrives every few pods: the shared spec stays in the table.
    if (i % 16 === 0) {
      assert.equal(parts.intern({ containers: [{ name: "app", image: "nginx" }] }), template);
    }
  }
  assert.ok(parts.size <= 128, `at most two generations of 64 parts, held ${parts.size}`);
  assert.throws(() => new SharedParts(0), RangeError);
});

Deno.test("parts whose scalars could run together are not taken for equal", () => {
  const parts = new SharedParts();
  const pairs: [unknown, unknown][] = [
    [{ ab: "c" }, { a: "bc" }],
    [["a,b"], ["a", "b"]],
    [[1], ["1"]],
    [[null], ["null"]],
    [[true], ["t"]],
    [{ a: [] }, { a: {} }],
    [{ a: 1, b: 2 }, { a: 12 }],
    [[{ x: 1 }, { y: 2 }], [{ x: 1, y: 2 }]],
  ];
  for (const [one, other] of pairs) {
    const a = parts.intern(structuredClone(one));
    const b = parts.intern(structuredClone(other));
    assert.notEqual(b, a, `${JSON.stringify(one)} and ${JSON.stringify(other)}`);
    assert.deepEqual(b, other);
    assert.equal(parts.intern(structuredClone(one)), a, `${JSON.stringify(one)} found again`);
  }
});
