/**
 * The kit's pod tag codec and its carriers: what one writes reads back the same, only what
 * vkubelet writes is read (DNS-1123 names, a UUID, a run count), and the stand-in pod of an
 * adopted run.
 */
import assert from "node:assert/strict";
import {
  decodePodTag,
  encodePodTag,
  keyedPodTags,
  type PodTag,
  podTagText,
  standInPod,
  tagMap,
} from "../../provider/mod.ts";

const uid = "0d7b4a2e-0000-4000-8000-000000000001";
const tag: PodTag = { node: "vk-1.example", namespace: "team-a", name: "web.0", uid, run: 3 };
const pod = { metadata: { namespace: "team-a", name: "web.0", uid } };

Deno.test("a pod's tag is its node, namespace, name, uid and run", () => {
  assert.deepEqual(encodePodTag("vk-1.example", pod, 3), tag);
  assert.equal(encodePodTag("vk", pod).run, 0);
});

Deno.test("a tag is decoded only when every field is one vkubelet writes", () => {
  assert.deepEqual(decodePodTag({ ...tag, run: "3" }), tag);
  assert.equal(decodePodTag({ ...tag, run: undefined })?.run, 0, "no run: the first");
  const bad: [string, Partial<Record<keyof PodTag, string | number>>][] = [
    ["a node name with a slash", { node: "vk/other" }],
    ["a namespace with a dot (not a DNS-1123 label)", { namespace: "team.a" }],
    ["a pod name with upper case", { name: "Web" }],
    ["a pod name of 254 characters", { name: "a".repeat(254) }],
    ["a uid that is not a UUID", { uid: "uid-1" }],
    ["a negative run", { run: "-1" }],
    ["a run of ten digits", { run: "1234567890" }],
    ["a missing name", { name: undefined }],
  ];
  for (const [what, change] of bad) {
    assert.equal(decodePodTag({ ...tag, ...change }), undefined, what);
  }
});

Deno.test("keyed tags read back what they wrote, older run keys too, and nothing forged", () => {
  const carrier = keyedPodTags({
    node: "vk/node",
    namespace: "vk/namespace",
    name: "vk/pod",
    uid: "vk/uid",
    run: "vk/restarts",
    oldRun: ["vk/generation"],
  });
  const written = carrier.write(tag);
  assert.deepEqual(written, {
    "vk/node": "vk-1.example",
    "vk/namespace": "team-a",
    "vk/pod": "web.0",
    "vk/uid": uid,
    "vk/restarts": "3",
  });
  assert.deepEqual(carrier.read({ ...written, other: "the backend's" }), tag);
  const { "vk/restarts": _, ...older } = written;
  assert.equal(carrier.read({ ...older, "vk/generation": "2" })?.run, 2);
  assert.equal(carrier.read({ ...written, "vk/pod": "../web" }), undefined);
  assert.equal(carrier.read(undefined), undefined);
});

Deno.test("a carrier without a run key writes none and reads run 0", () => {
  const labels = keyedPodTags({ node: "n", namespace: "ns", name: "p", uid: "u" });
  assert.deepEqual(Object.keys(labels.write(tag)).sort(), ["n", "ns", "p", "u"]);
  assert.deepEqual(labels.read(labels.write(tag)), { ...tag, run: 0 });
});

Deno.test("tags as a list of key and value read as a map", () => {
  assert.deepEqual(tagMap([{ key: "a", value: "1" }, { key: "b" }, { value: "x" }]), {
    a: "1",
    b: "",
  });
  assert.equal(tagMap(undefined), undefined);
});

Deno.test("a tag in one line of text reads back, and text with anything more does not", () => {
  const text = podTagText.write(tag);
  assert.equal(text, `vkubelet node=vk-1.example pod=team-a/web.0 uid=${uid} run=3`);
  assert.deepEqual(podTagText.read(text), tag);
  assert.equal(podTagText.read(`${text} mac=x`), undefined);
  assert.equal(podTagText.read(text.replace("team-a", "team_a")), undefined);
  assert.equal(podTagText.read(""), undefined);
});

Deno.test("an adopted run's stand-in pod is the tag's, bound to its node, with the kept spec", () => {
  const standIn = standInPod(tag, {
    containers: [{ name: "app", image: "nginx" }],
    initContainers: [],
    restartPolicy: "OnFailure",
  });
  assert.deepEqual(standIn, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "team-a", name: "web.0", uid },
    spec: {
      nodeName: "vk-1.example",
      restartPolicy: "OnFailure",
      containers: [{ name: "app", image: "nginx" }],
    },
  });
});
