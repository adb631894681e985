/**
 * A flood of the kubelet API, on the shared local control plane: 2,000 HTTPS requests with
 * random bearer tokens (each a TokenReview unless bounded) and 2,000 connections that never
 * start TLS, together. The node's Lease must keep being renewed within its duration (a Lease
 * older than that lets the node lifecycle controller mark the node NotReady: user-visible), and
 * the node must stay Ready. Memory (RSS of the vkubelet process) and the answers are printed,
 * not asserted. Bounded: the flood stops after 90 s whatever is left.
 */
import assert from "node:assert/strict";
import https from "node:https";
import { useCluster } from "../../tools/cluster/harness.ts";
import { nodeReady, startVkubelet } from "../../tools/cluster/vkubelet.ts";

const NODE = `vk-flood-${crypto.randomUUID().slice(0, 6)}`;
/** Short, so that a renewal stuck behind the flood shows within the test. */
const LEASE_SECONDS = 20;
const TOKENS = 2_000;
const IDLE = 2_000;
const FLOOD_MS = 90_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resident MiB of `pid`, from its /proc status. */
async function rssMiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kib / 102.4) / 10;
}

/** One GET /pods with a random bearer token: the status code, or the error's code. */
function randomTokenRequest(port: number, signal: AbortSignal): Promise<string> {
  const token = crypto.randomUUID() + crypto.randomUUID();
  return new Promise((resolve) => {
    const req = https.get({
      host: "127.0.0.1",
      port,
      path: "/pods",
      headers: { authorization: `Bearer ${token}` },
      rejectUnauthorized: false,
      agent: false,
      signal,
      timeout: 30_000,
    }, (res) => {
      res.resume();
      res.on("end", () => resolve(String(res.statusCode)));
      res.on("error", () => resolve("reset"));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

Deno.test({
  name: "2,000 random bearer tokens and 2,000 idle connections: the Lease is renewed on time",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const c = await useCluster();
    const vk = await startVkubelet(c, {
      nodeName: NODE,
      provider: "mock",
      args: [`--node-lease-duration-seconds=${LEASE_SECONDS}`],
    });
    let exited = false;
    vk.status.then(() => exited = true);
    const idle: Deno.Conn[] = [];
    const flood = new AbortController();
    const timer = setTimeout(() => flood.abort(), FLOOD_MS);
    try {
      const rssBefore = await rssMiB(vk.pid);
      let rssPeak = rssBefore;
      // The Lease's age and the node's Ready condition, every 2 s until the flood is over.
      let oldestLeaseSeconds = 0;
      const notReady: string[] = [];
      const watching = (async () => {
        while (!flood.signal.aborted) {
          // The Lease's age when the GET was sent: the answer is at least that fresh, whereas
          // the time it came back also counts the test process's own delay under its flood.
          const asked = Date.now();
          const renew = await c.kubectl([
            "-n",
            "kube-node-lease",
            "get",
            "lease",
            NODE,
            "-o",
            "jsonpath={.spec.renewTime}",
          ]);
          const age = (asked - Date.parse(renew.stdout.trim())) / 1000;
          if (Number.isFinite(age)) oldestLeaseSeconds = Math.max(oldestLeaseSeconds, age);
          const ready = await nodeReady(c, NODE);
          if (ready !== "True") notReady.push(`${new Date().toISOString()} Ready=${ready}`);
          rssPeak = Math.max(rssPeak, await rssMiB(vk.pid));
          await sleep(2_000);
        }
      })();
      const started = performance.now();
      // The idle connections: opened as fast as they are accepted or refused, then held.
      for (let i = 0; i < IDLE && !flood.signal.aborted; i++) {
        const conn = await Deno.connect({ hostname: "127.0.0.1", port: vk.port }).catch(() => {
          return undefined;
        });
        if (conn) idle.push(conn);
      }
      // The tokens: all at once, as a flood would send them (fewer at a time queue too shallow
      // on a shared client's limiter to delay a renewal by much).
      const answers = new Map<string, number>();
      let next = 0;
      await Promise.all(Array.from({ length: TOKENS }, async () => {
        while (next < TOKENS && !flood.signal.aborted) {
          next++;
          const answer = await randomTokenRequest(vk.port, flood.signal);
          answers.set(answer, (answers.get(answer) ?? 0) + 1);
        }
      }));
      const floodSeconds = (performance.now() - started) / 1000;
      // One more Lease duration after the flood: renewals must have caught up.
      await sleep(LEASE_SECONDS * 1000);
      flood.abort();
      await watching;
      const rssAfter = await rssMiB(vk.pid);
      console.log(
        `flood of ${next} tokens and ${IDLE} connections took ${floodSeconds.toFixed(1)} s; ` +
          `answers ${JSON.stringify(Object.fromEntries(answers))}; oldest Lease seen ` +
          `${oldestLeaseSeconds.toFixed(1)} s; RSS before ${rssBefore} MiB, peak ${rssPeak} MiB, ` +
          `after ${rssAfter} MiB`,
      );
      assert.ok(!exited, "vkubelet exited during the flood:\n" + vk.output());
      assert.ok(
        oldestLeaseSeconds < LEASE_SECONDS,
        `the Lease went ${oldestLeaseSeconds.toFixed(1)} s unrenewed (duration ${LEASE_SECONDS} s)`,
      );
      assert.deepEqual(notReady, [], "the node left Ready during the flood");
      assert.equal(await nodeReady(c, NODE), "True");
    } finally {
      clearTimeout(timer);
      flood.abort();
      for (const conn of idle) {
        try {
          conn.close();
        } catch { /* Closed by vkubelet already. */ }
      }
      if (!exited) await vk.stop("SIGTERM");
      await c.kubectl(["delete", "node", NODE, "--wait=false"]);
    }
  },
});
