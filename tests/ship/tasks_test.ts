import assert from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };

const root = new URL("../../", import.meta.url).pathname;

Deno.test("every deno task has a one-line description", () => {
  for (const [name, task] of Object.entries(denoJson.tasks)) {
    assert.equal(typeof task, "object", `${name}: use the object form with a description`);
    assert.ok(task.description.length > 10 && !task.description.includes("\n"), name);
  }
});

Deno.test("deno task ok keeps the layer check", () => {
  assert.match(denoJson.tasks.ok.command, /deno run --allow-read scripts\/check_layers\.ts/);
});

Deno.test("the kit's @examples run and pass, in deno task ok and so in the suite", async () => {
  assert.match(denoJson.tasks.ok.command, /deno test --doc provider\//);
  // CI runs the suite, not `deno task ok`: the examples an outside author copies run here too.
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["test", "--doc", `--config=${root}deno.json`, "provider/"],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, text);
  assert.match(text, /ok \| [1-9]\d* passed \| 0 failed/);
});

Deno.test("the kit's documentation is complete, in deno task ok and so in the suite", async () => {
  assert.match(denoJson.tasks.ok.command, /scripts\/check_kit_docs\.ts/);
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-run", "scripts/check_kit_docs.ts"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, text);
});

Deno.test("deno task start resolves relative paths from the caller's directory", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/sub`);
    await Deno.writeTextFile(`${dir}/sub/vk.yaml`, "nodeName: Not_A_Node_Name\n");
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["task", `--config=${root}deno.json`, "start", "--provider=mock", "--config=vk.yaml"],
      cwd: `${dir}/sub`,
      // As from a user's shell: deno task keeps an INIT_CWD it inherits (this suite itself may
      // run under `deno task test`), and sets it to the caller's directory only when unset.
      clearEnv: true,
      env: Object.fromEntries(
        ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"].flatMap((k) => {
          const v = Deno.env.get(k);
          return v === undefined ? [] : [[k, v]];
        }).concat([["NO_COLOR", "1"]]),
      ),
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 2, stderr);
    // Read from the caller's directory: the file's own error, not "cannot be read".
    assert.match(stderr, /nodeName in vk\.yaml: "Not_A_Node_Name" is not a valid node name/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
