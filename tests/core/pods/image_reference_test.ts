import assert from "node:assert/strict";
import { invalidImageMessage, parseImageReference } from "../../../core/pods/image_reference.ts";

const HEX64 = "a".repeat(64);

Deno.test("image references the docker grammar accepts parse, normalized as Docker does", () => {
  const cases: [string, Record<string, string | undefined>][] = [
    ["busybox", { domain: "docker.io", path: "library/busybox" }],
    ["busybox:1.36", { domain: "docker.io", path: "library/busybox", tag: "1.36" }],
    ["library/busybox", { domain: "docker.io", path: "library/busybox" }],
    ["index.docker.io/busybox", { domain: "docker.io", path: "library/busybox" }],
    ["docker.io/bitnami/nginx:1.25", { domain: "docker.io", path: "bitnami/nginx", tag: "1.25" }],
    ["a.b:5000/x/y:tag", { domain: "a.b:5000", path: "x/y", tag: "tag" }],
    [`x@sha256:${HEX64}`, { domain: "docker.io", path: "library/x", digest: `sha256:${HEX64}` }],
    [`x:v1@sha256:${HEX64}`, { domain: "docker.io", path: "library/x", tag: "v1" }],
    ["localhost/x", { domain: "localhost", path: "x" }],
    ["localhost:5000/x:latest", { domain: "localhost:5000", path: "x", tag: "latest" }],
    ["127.0.0.1:5000/team/app", { domain: "127.0.0.1:5000", path: "team/app" }],
    ["[::1]:5000/app:v2", { domain: "[::1]:5000", path: "app", tag: "v2" }],
    ["Registry.Example/app", { domain: "Registry.Example", path: "app" }],
    ["reg.example.test/pause:3.10", { domain: "reg.example.test", path: "pause", tag: "3.10" }],
    ["a.example.test/o/my_app__x.y-z", { domain: "a.example.test", path: "o/my_app__x.y-z" }],
    ["b.example.test/a/b/c/d:_tag.-x", {
      domain: "b.example.test",
      path: "a/b/c/d",
      tag: "_tag.-x",
    }],
    [`x@sha512:${"b".repeat(128)}`, { domain: "docker.io", path: "library/x" }],
  ];
  for (const [image, want] of cases) {
    const got = parseImageReference(image);
    for (const [k, v] of Object.entries(want)) {
      assert.equal(got[k as keyof typeof got], v, `${image}: ${k}`);
    }
    assert.equal(invalidImageMessage(image), undefined, image);
  }
});

Deno.test("image references the docker grammar rejects give distribution/reference's reason", () => {
  const cases: [string, string][] = [
    [
      "Not A//Valid::Image@@sha256:zz",
      "invalid reference format: repository name (/Valid) must be lowercase",
    ],
    ["Busybox", "invalid reference format: repository name (library/Busybox) must be lowercase"],
    ["busybox:", "invalid reference format"],
    ["busy box", "invalid reference format"],
    ["a//b", "invalid reference format"],
    ["-x", "invalid reference format"],
    ["x:-tag", "invalid reference format"],
    [`x:${"t".repeat(129)}`, "invalid reference format"],
    ["x@sha256:abc", "invalid reference format"],
    [`x@sha256:${"a".repeat(63)}`, "invalid checksum digest length"],
    [`x@sha256:${"A".repeat(64)}`, "invalid checksum digest format"],
    [`x@md5:${"a".repeat(32)}`, "unsupported digest algorithm"],
    [HEX64, `invalid repository name (${HEX64}), cannot specify 64-byte hexadecimal strings`],
    [`a.b/${"x".repeat(256)}`, "repository name must not be more than 255 characters"],
  ];
  for (const [image, reason] of cases) {
    assert.throws(() => parseImageReference(image), { message: reason }, image);
  }
});

Deno.test("the kubelet's InvalidImageName message names the image twice and the reason", () => {
  assert.equal(
    invalidImageMessage("busybox:"),
    'Failed to apply default image tag "busybox:": couldn\'t parse image name "busybox:": ' +
      "invalid reference format",
  );
});
