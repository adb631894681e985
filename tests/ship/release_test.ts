/**
 * What a release carries besides the code: the Apache-2.0 licence (LICENSE, deno.json's SPDX
 * identifier), a NOTICE that names every third-party file it cites and every npm package the
 * binaries embed, and a CHANGELOG with a section for deno.json's version.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import denoJson from "../../deno.json" with { type: "json" };

const root = new URL("../../", import.meta.url).pathname;
const read = (path: string) => Deno.readTextFile(`${root}${path}`);

Deno.test("LICENSE is the Apache License 2.0, word for word, and deno.json says so", async () => {
  const text = await read("LICENSE");
  // The MD5 of apache.org's LICENSE-2.0.txt, the standard text.
  assert.equal(createHash("md5").update(text).digest("hex"), "3b83ef96387f14655fc854ddc3c6bd57");
  assert.equal((denoJson as { license?: string }).license, "Apache-2.0");
});

Deno.test("NOTICE names files that exist and every npm package the binaries embed", async () => {
  const notice = await read("NOTICE");
  for (
    const [, path] of notice.matchAll(/^(?:- |)((?:[\w.-]+\/)+[\w.-]+\.(?:ts|json|yaml|mod)):/gm)
  ) {
    assert.ok(await Deno.stat(`${root}${path}`).catch(() => undefined), `${path} in NOTICE exists`);
  }
  const embedded = Object.keys(denoJson.imports)
    .map((name) => name.replace(/\/$/, ""))
    .filter((name) => !name.startsWith("@types/"));
  for (const name of embedded) {
    const named = name.startsWith("@aws-sdk/") ? "@aws-sdk/*" : name;
    assert.ok(notice.includes(named), `${name} (deno.json) has its licence in NOTICE`);
  }
});

Deno.test("CHANGELOG.md keeps a changelog with a section for deno.json's version", async () => {
  const changelog = await read("CHANGELOG.md");
  assert.match(changelog, /keepachangelog\.com/);
  assert.match(changelog, /^## \[Unreleased\]$/m);
  const version = denoJson.version.replaceAll(".", "\\.");
  assert.match(changelog, new RegExp(`^## \\[${version}\\] - \\d{4}-\\d{2}-\\d{2}$`, "m"));
});
