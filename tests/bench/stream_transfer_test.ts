import assert from "node:assert/strict";
import { serveEcho } from "../../bench/tools/stream_server.ts";
import {
  cpuOf,
  cpuOfTree,
  echo,
  pipeFile,
  quantile,
  randomFile,
} from "../../bench/tools/stream_transfer.ts";

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

Deno.test("the echo server sends every byte back to each of several clients", async () => {
  const stop = new AbortController();
  const port = freePort();
  const serving = serveEcho(port, stop.signal);
  try {
    const times = await Promise.all([echo(port, 3_000_000), echo(port, 1), echo(port, 0)]);
    assert.ok(times.every((ms) => ms >= 0));
  } finally {
    stop.abort();
    await serving;
  }
});

Deno.test("echo fails when fewer bytes come back than were sent", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  // A server that reads all it gets, then answers with 10 bytes.
  const serving = (async () => {
    const conn = await listener.accept();
    const buffer = new Uint8Array(65536);
    while (await conn.read(buffer) !== null) { /* drain */ }
    await conn.write(new Uint8Array(10));
    conn.close();
  })();
  try {
    await assert.rejects(echo(port, 1000), /echoed 10 of 1000 bytes/);
  } finally {
    await serving.catch(() => {});
    listener.close();
  }
});

Deno.test("a file piped through cat comes out whole, counted", async () => {
  const file = await randomFile(3 * 1024 * 1024 + 5);
  try {
    assert.equal((await Deno.stat(file)).size, 3 * 1024 * 1024 + 5);
    const out = await pipeFile(["cat"], file);
    assert.equal(out.code, 0);
    assert.equal(out.bytes, 3 * 1024 * 1024 + 5);
    const head = await pipeFile(["head", "-c", "100"], file);
    assert.equal(head.bytes, 100);
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("quantiles pick the nearest rank and refuse no samples", () => {
  assert.equal(quantile([5, 1, 4, 2, 3], 0.5), 3);
  assert.equal(quantile([5, 1, 4, 2, 3], 0.99), 5);
  assert.throws(() => quantile([], 0.5), /no samples/);
});

Deno.test("a process tree's CPU includes a busy grandchild that the root does not count", async () => {
  // sh forks a subshell that spins, says so, and sleeps; the root sh only waits.
  const child = new Deno.Command("sh", {
    args: ["-c", "(i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo spun; sleep 5) & wait"],
    stdout: "piped",
    detached: true,
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    assert.match((await reader.read()).value ?? "", /spun/);
    await reader.cancel();
    assert.ok(cpuOf(child.pid).own < 0.05, "the root only waits");
    assert.ok(cpuOfTree(child.pid) >= 0.1, `tree CPU ${cpuOfTree(child.pid)} s`);
    // Leaving out the subshell's subtree leaves the idle root.
    const subshells = Deno.readTextFileSync(`/proc/${child.pid}/task/${child.pid}/children`)
      .trim().split(" ").map(Number);
    assert.ok(cpuOfTree(child.pid, subshells) < 0.05);
  } finally {
    Deno.kill(-child.pid, "SIGKILL"); // the group: the sleeping subshell too
    await child.status;
  }
});
