import assert from "node:assert/strict";
import { parseAgentArgs } from "../../app/agent/mod.ts";

const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

Deno.test("the agent takes the arguments attach gives it, and the credential from the environment", async () => {
  const parsed = await parseAgentArgs(
    ["--server=https://198.18.0.1:10250", `--ca-base64=${btoa(PEM)}`, "--hosts-file=/tmp/h"],
    { VKUBELET_AGENT_CREDENTIAL: "vkt1.uid.secret" },
  );
  assert.ok(!("problems" in parsed), JSON.stringify(parsed));
  assert.equal(parsed.caPem, PEM);
  assert.equal(parsed.credential, "vkt1.uid.secret");
  assert.equal(parsed.server.port, "10250");
});

Deno.test("the agent names every missing or wrong argument at once", async () => {
  const parsed = await parseAgentArgs(["--server=http://x", "stray"], {});
  assert.ok("problems" in parsed);
  assert.equal(parsed.problems.length, 4, parsed.problems.join("\n"));
  assert.match(parsed.problems.join("\n"), /VKUBELET_AGENT_CREDENTIAL/);
});
