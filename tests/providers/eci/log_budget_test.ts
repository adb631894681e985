/**
 * The node's log mirror polls ECI containers under one budget (providers/eci/streams/
 * log_budget.ts), against the emulator that refuses any request straying from Alibaba's published
 * API metadata: with 12 containers and `logMirrorRequestsPerSecond: 5`, no second holds more
 * than 5 DescribeContainerLog calls (each container alone would be polled 5 times a second), and
 * every container's lines, those written later too, reach its 0.log once each. One answer holds
 * at most 2000 lines (Tail's maximum; ECI's default, and the emulator's, is 500): a container
 * that wrote 1500 between polls has them all mirrored, and one that wrote more is polled again at
 * once and the lines skipped are named in a warning.
 */
import assert from "node:assert/strict";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { type Logger, PodLogDir, readContainerLog } from "../../../provider/mod.ts";
import { createProvider } from "../../../providers/eci/mod.ts";
import { EciApi, type LogQuery } from "../../../providers/eci/client/api.ts";
import { parseEciConfig } from "../../../providers/eci/config.ts";
import { LogBudget } from "../../../providers/eci/streams/log_budget.ts";
import { eciPod, emulatorConfig, useTestCredentials } from "../../../tools/harness/eci/env.ts";
import { startEciEmulator } from "../../../tools/harness/eci/emulator.ts";
import { eventually } from "../../../tools/harness/wait.ts";

const quiet: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };
const BUDGET = 5;

Deno.test("the ECI log mirror keeps to its calls per second and still serves every container", async () => {
  const emu = await startEciEmulator();
  const unset = useTestCredentials();
  const root = await Deno.makeTempDir({ prefix: "vk-eci-budget-" });
  const podLogs = new PodLogDir({
    dir: `${root}/pods`,
    linkDir: `${root}/containers`,
    maxBytes: 1 << 20,
    maxFiles: 2,
    clock: realClock,
    nodeName: "vk-eci-budget",
    maxStreams: 200,
  });
  const shutdown = new AbortController();
  const provider = createProvider(
    emulatorConfig(emu, { logMirrorRequestsPerSecond: BUDGET }),
    {
      nodeName: "vk-eci-budget",
      log: quiet,
      clock: realClock,
      internalIp: "127.0.0.1",
      daemonPort: 10250,
      signal: shutdown.signal,
      podLogs,
    },
  );
  const pods: Pod[] = [];
  const linesOf = async (pod: Pod) => {
    const { namespace = "", name = "", uid = "" } = pod.metadata!;
    const target = { namespace, pod: name, uid, container: "main", restartCount: 0 };
    const records = await readContainerLog(podLogs.logPath(target)).catch(() => []);
    return records.map((r) => new TextDecoder().decode(r.text));
  };
  const allHave = async (n: number) => {
    for (const pod of pods) if ((await linesOf(pod)).length < n) return false;
    return true;
  };
  // DescribeContainerLog calls seen, sampled every 25 ms, to find the busiest second.
  const samples: [number, number][] = [];
  const logCalls = () => emu.calls.filter((c) => c === "DescribeContainerLog").length;
  const sampler = setInterval(() => samples.push([performance.now(), logCalls()]), 25);
  try {
    for (let i = 0; i < 12; i++) {
      const pod = eciPod(`talker-${i}`, {
        containers: [{ name: "main", image: "busybox", command: ["sh", "-c", `echo c${i} one`] }],
      });
      pods.push(pod);
      await provider.createPod(pod, {});
    }
    await eventually("every container's first line", () => allHave(1), 30_000);
    for (const [i, group] of [...emu.groups.values()].entries()) {
      emu.writeLog(group.id, "main", [`later ${i}`]);
    }
    await eventually("every container's later line", () => allHave(2), 30_000);
    await new Promise((r) => setTimeout(r, 1_500));
    // The groups were made in the pods' order, and each got its "later" line in that order.
    for (const [i, pod] of pods.entries()) {
      assert.deepEqual(await linesOf(pod), [`c${i} one`, `later ${i}`], `talker-${i}`);
    }
    let busiest = 0;
    for (const [t, n] of samples) {
      const later = samples.findLast(([u]) => u <= t + 1000);
      if (later && later[0] - t >= 950) busiest = Math.max(busiest, later[1] - n);
    }
    // One call in a sampled second may straddle its start.
    assert.ok(busiest <= BUDGET + 1, `${busiest} DescribeContainerLog calls in one second`);
    assert.ok(logCalls() > 12, "every container was polled more than once");
    assert.deepEqual(emu.strays, []);
  } finally {
    clearInterval(sampler);
    shutdown.abort();
    await provider.close();
    unset();
    await emu.stop();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a throttled DescribeContainerLog holds the polls back, and the line still comes once", async () => {
  let throttle = 2;
  const at: number[] = [];
  const api = {
    log(query: LogQuery): Promise<string> {
      at.push(performance.now());
      if (throttle-- > 0) {
        return Promise.reject(Object.assign(new Error("Request was denied"), {
          code: "Throttling.User",
        }));
      }
      const stamp = "2026-12-07T21:00:00.000000000Z";
      return Promise.resolve(query.startTime && query.startTime > stamp ? "" : `${stamp} hi\n`);
    },
  };
  const budget = new LogBudget({
    api,
    clock: realClock,
    log: quiet,
    requestsPerSecond: 50,
    intervalMs: 10,
  });
  const stop = new AbortController();
  let text = "";
  const reading = (async () => {
    const stream = budget.follow("eci-1", "main", { signal: stop.signal });
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  })();
  try {
    await eventually("the line", () => text !== "");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(text, "2026-12-07T21:00:00.000000000Z hi\n");
    assert.equal(budget.stats.throttled, 2);
    // 20 ms between calls at 50/s; after throttling, 40 then 80 ms.
    assert.ok(at[1] - at[0] >= 38 && at[2] - at[1] >= 78, JSON.stringify(at));
  } finally {
    stop.abort();
    await reading;
    await budget.idle();
  }
});

/** A LogBudget on the emulator, one group with container "main", and the warnings it logs. */
async function budgetOnEmulator(
  test: (
    ctx: {
      emu: Awaited<ReturnType<typeof startEciEmulator>>;
      budget: LogBudget;
      groupId: string;
      warnings: string[];
      queries: LogQuery[];
    },
  ) => Promise<void>,
) {
  const restore = useTestCredentials();
  const emu = await startEciEmulator();
  const warnings: string[] = [];
  const queries: LogQuery[] = [];
  const log: Logger = {
    ...quiet,
    warning: (m, p) => warnings.push(m.replace(/\{(\w+)\}/g, (_, k) => String(p?.[k]))),
  };
  const budget = (api: EciApi) =>
    new LogBudget({
      api: { log: (q, signal) => (queries.push(q), api.log(q, signal)) },
      clock: realClock,
      log: { ...log, warn: log.warning },
      requestsPerSecond: 20,
      // Long: a second poll within the test is the catch-up, not the container's next turn.
      intervalMs: 60_000,
    });
  try {
    const parsed = parseEciConfig(emulatorConfig(emu));
    assert.ok(parsed.ok);
    const api = new EciApi(parsed.config, realClock);
    const groupId = await api.create({
      containerGroupName: "loud",
      clientToken: "loud",
      container: [{ name: "main", image: "busybox" }] as never[],
    });
    await test({ emu, budget: budget(api), groupId, warnings, queries });
    assert.deepEqual(emu.strays, [], "every request matched the published metadata");
  } finally {
    await emu.stop();
    restore();
  }
}

Deno.test("a container that wrote 1500 lines between two polls has all 1500 mirrored", async () => {
  await budgetOnEmulator(async ({ emu, budget, groupId, warnings }) => {
    const since = new Date(Date.now() - 1_000);
    emu.writeLog(groupId, "main", Array.from({ length: 1500 }, (_, i) => `line ${i}`));
    const stop = new AbortController();
    const lines: string[] = [];
    const reading = (async () => {
      let pending = "";
      const stream = budget.follow(groupId, "main", {
        since,
        pod: "team-a/loud",
        signal: stop.signal,
      });
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
        pending += chunk;
        const parts = pending.split("\n");
        pending = parts.pop()!;
        lines.push(...parts);
      }
    })();
    try {
      await eventually("the first answer", () => budget.stats.requests >= 1 && lines.length > 0);
      await new Promise((r) => setTimeout(r, 300));
      // ECI answers 500 lines without Tail: the first 1000 would never reach the node's log.
      assert.equal(lines.length, 1500);
      assert.equal(lines[0].replace(/^\S+ /, ""), "line 0");
      assert.deepEqual(warnings, []);
    } finally {
      stop.abort();
      await reading;
      await budget.idle();
    }
  });
});

Deno.test("an answer at ECI's 2000-line cap is polled again at once and the skipped range is warned about", async () => {
  await budgetOnEmulator(async ({ emu, budget, groupId, warnings, queries }) => {
    const since = new Date(Date.now() - 1_000);
    emu.writeLog(groupId, "main", Array.from({ length: 2500 }, (_, i) => `line ${i}`));
    const stop = new AbortController();
    let text = "";
    const reading = (async () => {
      const stream = budget.follow(groupId, "main", {
        since,
        pod: "team-a/loud",
        signal: stop.signal,
      });
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
    })();
    try {
      await eventually("the first answer", () => text !== "");
      // The first 500 lines are beyond one answer; the catch-up poll comes at the next slot
      // (50 ms at 20/s), long before the container's 60 s interval.
      await eventually("the catch-up poll", () => queries.length >= 2, 2_000);
      assert.ok(queries.every((q) => q.tail === 2000), JSON.stringify(queries.map((q) => q.tail)));
      const lines = text.trimEnd().split("\n");
      assert.equal(lines.length, 2000);
      assert.equal(lines[0].replace(/^\S+ /, ""), "line 500");
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      const first = lines[0].split(" ")[0];
      for (const part of ["team-a/loud", "main", groupId, since.toISOString(), first]) {
        assert.ok(warnings[0].includes(part), `${part} in ${warnings[0]}`);
      }
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(queries.length, 2, "one catch-up poll, then the container waits its turn");
    } finally {
      stop.abort();
      await reading;
      await budget.idle();
    }
  });
});
