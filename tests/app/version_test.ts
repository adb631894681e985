import assert from "node:assert/strict";
import { type RunGit, stampOfCheckout, versionLine } from "../../app/version.ts";

const HEAD = "0123456789abcdef0123456789abcdef01234567";

/** A git that answers from a table keyed by its arguments; undefined (git failed) otherwise. */
function fakeGit(answers: Record<string, string>): RunGit {
  return (_dir, args) => Promise.resolve(answers[args.join(" ")]);
}

Deno.test("--version names the stamped commit, marked -dirty when tracked files had changes", () => {
  assert.equal(
    versionLine("0.1.0", { stamp: { commit: HEAD, dirty: false }, source: "stamped" }),
    `vkubelet 0.1.0 (commit ${HEAD}, built by deno task compile)`,
  );
  assert.equal(
    versionLine("0.1.0", { stamp: { commit: HEAD, dirty: true }, source: "checkout" }),
    `vkubelet 0.1.0 (commit ${HEAD}-dirty, read from the git checkout)`,
  );
});

Deno.test("a checkout's HEAD is read only at the checkout's top, with its dirty state", async () => {
  const clean = fakeGit({
    "rev-parse --show-prefix": "",
    "rev-parse HEAD": HEAD,
    "status --porcelain --untracked-files=no": "",
  });
  assert.deepEqual(await stampOfCheckout("/src/", clean), {
    stamp: { commit: HEAD, dirty: false },
  });
  const dirty = fakeGit({
    "rev-parse --show-prefix": "",
    "rev-parse HEAD": HEAD,
    "status --porcelain --untracked-files=no": " M main.ts",
  });
  assert.deepEqual(await stampOfCheckout("/src/", dirty), { stamp: { commit: HEAD, dirty: true } });
});

Deno.test("no checkout, a copy inside another repository, or no commit yet: commit unknown, saying why", async () => {
  const none = await stampOfCheckout("/src/", fakeGit({}));
  assert.deepEqual(none, {
    unknown: "not built by deno task compile, and not run from a git checkout",
  });
  const nested = await stampOfCheckout(
    "/other/vendor/vkubelet/",
    fakeGit({ "rev-parse --show-prefix": "vendor/vkubelet/", "rev-parse HEAD": HEAD }),
  );
  assert.ok("unknown" in nested);
  const empty = await stampOfCheckout("/src/", fakeGit({ "rev-parse --show-prefix": "" }));
  assert.deepEqual(empty, { unknown: "the git checkout has no commit yet" });
  assert.equal(
    versionLine("0.1.0", empty),
    "vkubelet 0.1.0 (commit unknown: the git checkout has no commit yet)",
  );
});
