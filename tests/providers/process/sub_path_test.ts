import assert from "node:assert/strict";
import { join } from "node:path";
import { resolveSubPath } from "../../../providers/process/launch/sub_path.ts";

async function volume(): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "vk-subpath-" }));
  await Deno.mkdir(join(dir, "real/dir"), { recursive: true });
  await Deno.writeTextFile(join(dir, "real/file"), "x");
  await Deno.symlink("real/dir", join(dir, "inside"));
  await Deno.symlink("/etc", join(dir, "out"));
  await Deno.symlink("../..", join(dir, "real/up"));
  await Deno.symlink("/nowhere-at-all", join(dir, "dangling"));
  return dir;
}

Deno.test("a subPath's symlinks may lead only inside its volume, as the kubelet resolves them", async () => {
  const dir = await volume();
  try {
    const reason = (path: string) => {
      const r = resolveSubPath(dir, path);
      return r.ok ? r.subPath : r.reason;
    };
    assert.deepEqual(reason("inside"), {
      volume: dir,
      path: "real/dir",
      isDirectory: true,
      mode: (Deno.statSync(dir).mode ?? 0) & 0o7777,
    });
    assert.equal((reason("real/file") as { isDirectory: boolean }).isDirectory, false);
    assert.equal((reason("inside/new/deeper") as { path: string }).path, "real/dir/new/deeper");
    assert.match(reason("out") as string, /leads out of the volume/);
    assert.match(reason("out/passwd") as string, /leads out of the volume/);
    assert.match(reason("real/up/x") as string, /leads out of the volume/);
    assert.match(reason("dangling") as string, /dangling is a symlink that leads nowhere/);
    assert.match(reason("real/file/x") as string, /file is not a directory/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a subPath's volume given through a symlink (a hostPath raced out of its prefix) is refused", async () => {
  const dir = await volume();
  try {
    // `out` leads to /etc: the volume path the caller checked is no longer where it leads.
    const resolved = resolveSubPath(join(dir, "out"), "hostname");
    assert.deepEqual(resolved, {
      ok: false,
      reason: "its volume's path now has a symlink in it; it is not used",
    });
    assert.equal(resolveSubPath(join(dir, "real"), "file").ok, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
