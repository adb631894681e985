/**
 * `--remote-pod-network`'s stateDir holds the relays' Unix sockets
 * (`<stateDir>/remote/<pod uid>-<port>.sock`), whose paths Linux caps: a stateDir too long for
 * them is refused at start-up naming the longest that fits, instead of every pod failing its
 * attach with the system's "path must be shorter than SUN_LEN".
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { RemotePodNetworks } from "../../providers/process/network/tunnel_network.ts";

Deno.test("a short stateDir is fine; a long one is refused naming the longest that fits", () => {
  assert.equal(RemotePodNetworks.stateDirProblem("/var/lib/vkubelet/remote-pods"), undefined);
  const long = `/srv/${"d".repeat(60)}`;
  const problem = RemotePodNetworks.stateDirProblem(long);
  assert.match(problem ?? "", new RegExp(`stateDir ${long} is too long .* at most (\\d+) bytes`));
  const allowed = Number(problem!.match(/at most (\d+) bytes/)![1]);
  assert.equal(RemotePodNetworks.stateDirProblem("/".padEnd(allowed, "x")), undefined);
  assert.ok(RemotePodNetworks.stateDirProblem("/".padEnd(allowed + 1, "x")));
});

Deno.test("the limit is the kernel's: a socket path of 107 bytes binds, 108 does not", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vk-sun-" });
  try {
    const path = (n: number) => join(dir, "s".repeat(n - dir.length - 1));
    const fits = Deno.listen({ transport: "unix", path: path(107) });
    fits.close();
    assert.throws(() => Deno.listen({ transport: "unix", path: path(108) }));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
