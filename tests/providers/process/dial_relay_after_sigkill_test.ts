/**
 * A connection dialed inside a network namespace (`dialInNetns`: outgoing Service connections
 * of remote pods, port-forward, httpGet probes) ends with the vkubelet that dialed it: its socat
 * relay gets the parent-death signal. Without it, a vkubelet killed with SIGKILL leaves the relay
 * connected for up to a day (`-t 86400` after its stdin's EOF), holding the peer's connection.
 * The first "vkubelet" is a subprocess that dials a server of this test (inside the test's own
 * network namespace) and is killed. Root only (nsenter).
 * @module
 */
import assert from "node:assert/strict";

const skip = Deno.uid() !== 0 ? "needs root (nsenter --net)" : undefined;
if (skip) console.warn(`dial relay after SIGKILL test skipped: ${skip}`);

const dial = new URL("../../../providers/process/network/dial.ts", import.meta.url);

/** Dials 127.0.0.1:port inside the given namespace, says so, and waits. */
const FIRST_VKUBELET = `
import { dialInNetns } from "${dial}";
const { netns, port } = JSON.parse(Deno.env.get("FIRST_VKUBELET"));
const conn = dialInNetns(netns, "127.0.0.1", port);
const writer = conn.writable.getWriter();
await writer.write(new TextEncoder().encode("hello\\n"));
console.log("dialed");
await new Promise(() => {});
`;

/** The pids of processes whose command line names `text`. */
function processesNaming(text: string): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
      const state = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1]?.[0];
      if (cmdline.includes(text) && state !== "Z") found.push(pid);
    } catch {
      // gone
    }
  }
  return found;
}

Deno.test({
  name: "a relay dialed inside a network namespace ends with the vkubelet killed with SIGKILL",
  ignore: skip !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const server = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (server.addr as Deno.NetAddr).port;
    const accepted = server.accept();
    const target = `TCP4:127.0.0.1:${port},`;
    let relays: number[] = [];
    let peer: Deno.Conn | undefined;
    try {
      const first = new Deno.Command(Deno.execPath(), {
        args: ["eval", FIRST_VKUBELET],
        env: {
          FIRST_VKUBELET: JSON.stringify({ netns: `/proc/${Deno.pid}/ns/net`, port }),
        },
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      const reader = first.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let said = "";
      while (!said.includes("dialed")) {
        const { value, done } = await reader.read();
        if (done) break;
        said += value;
      }
      reader.releaseLock();
      peer = await accepted;
      const got = new Uint8Array(6);
      await peer.read(got);
      assert.equal(new TextDecoder().decode(got), "hello\n", "the relay carried nothing");
      relays = processesNaming(target);
      assert.ok(relays.length > 0, "the relay was not found");

      first.kill("SIGKILL");
      await first.status;
      await first.stdout.cancel().catch(() => {});
      for (let i = 0; i < 40 && processesNaming(target).length; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const left = processesNaming(target);
      assert.deepEqual(left, [], `relays of the killed vkubelet still run: pids ${left}`);
      // And the peer sees its connection end.
      const after = await peer.read(new Uint8Array(16));
      assert.equal(after, null, "the peer's connection is still open");
    } finally {
      for (const pid of processesNaming(target)) Deno.kill(pid, "SIGKILL");
      peer?.close();
      server.close();
    }
  },
});
