/**
 * `deno task compile`: `--help` answers, bad arguments are named, the `--js` bundle's
 * `--version` names the commit it was built from, and a failing `deno compile` shows its own
 * error — with DENORT_BIN named when Deno's download site cannot be reached (here: every request
 * goes through a proxy on a closed loopback port).
 */
import assert from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };
import { freePort } from "../../tools/cluster/ports.ts";

const root = new URL("../../", import.meta.url).pathname;

/** `deno task compile args` from the repository, with only the environment it needs. */
async function compileTask(args: string[], env: Record<string, string> = {}) {
  const keep = ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"].flatMap((k) => {
    const v = Deno.env.get(k);
    return v === undefined ? [] : [[k, v]];
  });
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", `--config=${root}deno.json`, "compile", ...args],
    cwd: root,
    clearEnv: true,
    env: { ...Object.fromEntries(keep), NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

async function git(args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args: ["-C", root, ...args] }).output();
  assert.ok(out.success, `git ${args.join(" ")}`);
  return new TextDecoder().decode(out.stdout).trim();
}

/** This checkout's commit as --version prints it (`-dirty` with uncommitted tracked changes). */
async function checkoutCommit(): Promise<string> {
  const dirty = await git(["status", "--porcelain", "--untracked-files=no"]);
  return `${await git(["rev-parse", "HEAD"])}${dirty ? "-dirty" : ""}`;
}

Deno.test("deno task compile --help prints its options and the offline way, exit 0", async () => {
  const res = await compileTask(["--help"]);
  assert.equal(res.code, 0, res.stderr);
  for (const word of ["--target=TARGET", "--out-dir=DIR", "--js", "--commit=SHA", "DENORT_BIN"]) {
    assert.ok(res.stdout.includes(word), word);
  }
});

Deno.test("deno task compile names an unknown option or target and exits 2", async () => {
  const option = await compileTask(["--tagret=x86_64-unknown-linux-gnu"]);
  assert.equal(option.code, 2);
  assert.match(option.stderr, /Unknown option '--tagret'/);
  assert.match(option.stderr, /deno task compile --help/);
  const target = await compileTask(["--target=riscv64-unknown-linux-gnu"]);
  assert.equal(target.code, 2);
  assert.match(target.stderr, /unknown target riscv64-unknown-linux-gnu; use one of x86_64-/);
});

Deno.test("the --js bundle's --version names the commit it was built from, away from the checkout", async () => {
  const out = await Deno.makeTempDir({ prefix: "vk-compile-js-" });
  try {
    const res = await compileTask(["--js", `--out-dir=${out}`]);
    assert.equal(res.code, 0, res.stderr);
    const version = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-config",
        "--allow-read",
        "--allow-env",
        `${out}/vkubelet.js`,
        "--version",
      ],
      cwd: out,
      stdout: "piped",
    }).output();
    assert.equal(
      new TextDecoder().decode(version.stdout),
      `vkubelet ${denoJson.version} (commit ${await checkoutCommit()}, built by deno task compile)\n`,
    );
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("deno task compile shows deno compile's own error and names DENORT_BIN when Deno's download site is unreachable", async () => {
  const out = await Deno.makeTempDir({ prefix: "vk-compile-" });
  const proxy = `http://127.0.0.1:${freePort()}`;
  try {
    const target = "x86_64-unknown-linux-gnu";
    const res = await compileTask([`--target=${target}`, `--out-dir=${out}`], {
      HTTPS_PROXY: proxy,
      HTTP_PROXY: proxy,
    });
    if (res.code === 0) {
      // A denort already in Deno's cache: then the binary itself must carry the stamp.
      const version = await new Deno.Command(`${out}/vkubelet-${target}`, {
        args: ["--version"],
        stdout: "piped",
      }).output();
      assert.match(new TextDecoder().decode(version.stdout), /built by deno task compile/);
      return;
    }
    assert.equal(res.code, 1);
    // deno compile's own words, not only our summary.
    assert.match(res.stderr, /Setting up base binary/);
    assert.match(res.stderr, /error sending request for url/);
    assert.match(res.stderr, /Deno's download site is unreachable from here/);
    assert.match(
      res.stderr,
      new RegExp(`set DENORT_BIN to a denort binary of Deno [\\d.]+ for ${target}`),
    );
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
