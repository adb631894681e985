import assert from "node:assert/strict";
import {
  chooseStateDir,
  defaultStateDirs,
  StateDirError,
} from "../../../providers/process/state/state_dir.ts";

Deno.test("the default state directories: systemd's, /var/lib, then the user's", () => {
  assert.deepEqual(defaultStateDirs({ HOME: "/home/u" }), [
    "/var/lib/vkubelet/process",
    "/home/u/.local/state/vkubelet/process",
  ]);
  assert.deepEqual(defaultStateDirs({ STATE_DIRECTORY: "/var/lib/vk:/x", XDG_STATE_HOME: "/s" }), [
    "/var/lib/vk/process",
    "/var/lib/vkubelet/process",
    "/s/vkubelet/process",
  ]);
});

Deno.test("a directory that cannot be created falls back to the next (a non-root user)", async () => {
  const home = await Deno.makeTempDir({ prefix: "vk-state-" });
  try {
    // Nobody, root included, can create directories under /proc.
    const dirs = ["/proc/vkubelet-test/process", `${home}/.local/state/vkubelet/process`];
    assert.equal(await chooseStateDir(dirs), dirs[1]);
    assert.ok((await Deno.stat(`${dirs[1]}/pods`)).isDirectory);
    await assert.rejects(chooseStateDir(["/proc/a", "/proc/b"]), (err) => {
      assert.ok(err instanceof StateDirError);
      assert.match(err.message, /\/proc\/a: .*; \/proc\/b: .*set stateDir in the provider config/);
      return true;
    });
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("a later directory that already holds pods wins, so a restart re-adopts them", async () => {
  const root = await Deno.makeTempDir({ prefix: "vk-state-" });
  try {
    await Deno.mkdir(`${root}/second/pods`, { recursive: true });
    assert.equal(await chooseStateDir([`${root}/first`, `${root}/second`]), `${root}/second`);
    await assert.rejects(Deno.stat(`${root}/first`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
