import assert from "node:assert/strict";

const logModule = new URL("../../base/log.ts", import.meta.url).href;

/** What vkubelet prints at `level` for an error with a cause, logged as a property. */
async function logged(level: string, format = "text"): Promise<string> {
  const code = `
    import { getLogger, setupLogging } from "${logModule}";
    await setupLogging({ level: "${level}", format: "${format}" });
    const cause = new TypeError("Connection refused (os error 111)");
    const err = new Error("connection to https://127.0.0.1:6443 failed", { cause });
    getLogger(["vkubelet", "test"]).error("watching pods failed: {err}", { err });
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-check", code],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return new TextDecoder().decode(out.stderr);
}

Deno.test("an error is logged as one line with its causes, not a stack", async () => {
  const text = await logged("info");
  assert.equal(text.trimEnd().split("\n").length, 1, text);
  assert.match(
    text,
    /watching pods failed: "?connection to https:\/\/127\.0\.0\.1:6443 failed: Connection refused \(os error 111\)"?/,
  );
  const json = JSON.parse(await logged("info", "json"));
  assert.equal(
    json.properties.err,
    "connection to https://127.0.0.1:6443 failed: Connection refused (os error 111)",
  );
});

Deno.test("at debug the stack is kept", async () => {
  const text = await logged("debug");
  assert.ok(text.trimEnd().split("\n").length > 1, text);
  assert.match(text, /\n\s+at /);
});
