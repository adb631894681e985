/**
 * The node's log mirror over the fargate backend's batched reads, with moto as CloudWatch Logs:
 * 30 containers' lines, written into their streams as the awslogs driver would, reach each
 * container's `0.log` once and in order with one log read a round (ceil(30 / 100) = 1), not one
 * per container; and a mirror stopped and started again (vkubelet's restart) resumes after the
 * last line written, lines at the same millisecond included, with no gap and no duplicate.
 */
import assert from "node:assert/strict";
import {
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from "@aws-sdk/client-cloudwatch-logs";
import type { Task } from "@aws-sdk/client-ecs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../../base/clock.ts";
import { LogMirror } from "../../../provider/log_mirror.ts";
import {
  type Logger,
  PodLogDir,
  readContainerLog,
  type RemoteLogRuns,
} from "../../../provider/mod.ts";
import { FargateBackend, type FargateBackendDeps } from "../../../providers/fargate/backend.ts";
import { type FargateConfig, parseFargateConfig } from "../../../providers/fargate/config.ts";
import { eventually } from "../../../tools/harness/wait.ts";
import { type Moto, startMoto } from "./_moto.ts";

const quiet: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };
const GROUP = "/vkubelet/mirror-test";
const INTERVAL_MS = 300;

/** Log reads moto was sent through `moto.logs`, by operation. */
function countReads(moto: Moto): Map<string, number> {
  const reads = new Map<string, number>();
  moto.logs.middlewareStack.add((next, context) => (args) => {
    const name = context.commandName ?? "";
    if (/^(FilterLogEvents|GetLogEvents)Command$/.test(name)) {
      reads.set(name, (reads.get(name) ?? 0) + 1);
    }
    return next(args);
  }, { step: "initialize", name: "countLogReads" });
  return reads;
}

function configFor(moto: Moto): FargateConfig {
  const parsed = parseFargateConfig({
    region: moto.region,
    endpoint: moto.endpoint,
    subnets: [moto.subnet],
    executionRoleArn: "arn:aws:iam::123456789012:role/ecsTaskExecutionRole",
    logGroup: GROUP,
    logMirrorInterval: `${INTERVAL_MS}ms`,
    logMirrorRequestsPerSecond: 20,
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  return parsed.config;
}

interface Fleet {
  pods: Pod[];
  runs: Map<string, RemoteLogRuns<Task>>;
  write(i: number, lines: string[], atMs?: number): Promise<void>;
}

async function fleet(moto: Moto, n: number): Promise<Fleet> {
  await moto.logs.send(new CreateLogGroupCommand({ logGroupName: GROUP }));
  const pods: Pod[] = [];
  const runs = new Map<string, RemoteLogRuns<Task>>();
  for (let i = 0; i < n; i++) {
    const pod: Pod = {
      metadata: { namespace: "ns", name: `p${i}`, uid: `uid-${i}` },
      spec: { containers: [{ name: "app", image: "busybox" }] },
      status: {
        containerStatuses: [{
          name: "app",
          image: "busybox",
          imageID: "",
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: new Date().toISOString() } },
        }],
      },
    };
    pods.push(pod);
    const taskArn = `arn:aws:ecs:${moto.region}:123456789012:task/vk-test/task${i}`;
    runs.set(`p${i}`, { current: { pod, containers: {}, handle: { taskArn } } });
    await moto.logs.send(
      new CreateLogStreamCommand({ logGroupName: GROUP, logStreamName: `vk/app/task${i}` }),
    );
  }
  return {
    pods,
    runs,
    async write(i, lines, atMs) {
      const now = atMs ?? Date.now();
      await moto.logs.send(
        new PutLogEventsCommand({
          logGroupName: GROUP,
          logStreamName: `vk/app/task${i}`,
          logEvents: lines.map((message) => ({ timestamp: now, message })),
        }),
      );
    },
  };
}

/** A fargate backend and a log mirror over it, as vkubelet runs them, until `stop`. */
function mirrorOf(moto: Moto, f: Fleet, dir: PodLogDir) {
  const life = new AbortController();
  const backend = new FargateBackend({
    ecs: {} as FargateBackendDeps["ecs"],
    secrets: {} as FargateBackendDeps["secrets"],
    logs: moto.logs,
    config: configFor(moto),
    nodeName: "vk-mirror",
    clock: realClock,
    event: () => {},
    log: quiet,
    signal: life.signal,
  });
  const byName = new Map(f.pods.map((p) => [p.metadata!.name!, p]));
  const mirror = new LogMirror({
    dir,
    logs: (ref, o) =>
      backend.mirrorLogs(byName.get(ref.pod)!, ref.container, o, f.runs.get(ref.pod)),
    clock: realClock,
    log: quiet,
    retryMs: 200,
  });
  for (const pod of f.pods) mirror.observe(pod);
  return {
    backend,
    async stop() {
      await mirror.close();
      life.abort();
      await backend.logBatch?.idle();
    },
  };
}

async function withMoto(body: (moto: Moto, dir: PodLogDir) => Promise<void>): Promise<void> {
  const moto = await startMoto();
  const root = await Deno.makeTempDir({ prefix: "vk-fargate-mirror-" });
  const dir = new PodLogDir({
    dir: `${root}/pods`,
    linkDir: `${root}/containers`,
    maxBytes: 1 << 20,
    maxFiles: 2,
    clock: realClock,
    nodeName: "vk-mirror",
    maxStreams: 200,
  });
  try {
    await body(moto, dir);
  } finally {
    await moto.stop();
    await Deno.remove(root, { recursive: true });
  }
}

function linesOf(dir: PodLogDir, pod: Pod): Promise<string[]> {
  const { name = "", uid = "" } = pod.metadata ?? {};
  const path = dir.logPath({ namespace: "ns", pod: name, uid, container: "app", restartCount: 0 });
  return readContainerLog(path).then(
    (records) => records.map((r) => new TextDecoder().decode(r.text)),
    () => [],
  );
}

async function allHave(dir: PodLogDir, pods: Pod[], n: number): Promise<boolean> {
  for (const pod of pods) if ((await linesOf(dir, pod)).length < n) return false;
  return true;
}

const numbered = (i: number, from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, k) => `c${i} line ${from + k}`);

Deno.test("30 fargate containers' logs are mirrored once and in order, one FilterLogEvents a round", async () => {
  await withMoto(async (moto, dir) => {
    const n = 30;
    const f = await fleet(moto, n);
    for (let i = 0; i < n; i++) await f.write(i, numbered(i, 1, 5));
    const reads = countReads(moto);
    const startedMs = Date.now();
    const running = mirrorOf(moto, f, dir);
    try {
      await eventually("the first five lines everywhere", () => allHave(dir, f.pods, 5), 30_000);
      for (let i = 0; i < n; i++) await f.write(i, numbered(i, 6, 10));
      await eventually("all ten lines everywhere", () => allHave(dir, f.pods, 10), 30_000);
      await new Promise((r) => setTimeout(r, 3 * INTERVAL_MS));
      for (let i = 0; i < n; i++) {
        assert.deepEqual(await linesOf(dir, f.pods[i]), numbered(i, 1, 10), `container ${i}`);
      }
    } finally {
      await running.stop();
    }
    // ceil(30 / 100) = 1 request a round (and a round every INTERVAL_MS at most); following
    // each container by itself asks 30 times a second.
    const rounds = (Date.now() - startedMs) / INTERVAL_MS + 2;
    const total = [...reads.values()].reduce((a, b) => a + b, 0);
    assert.ok(
      total <= Math.ceil(n / 100) * rounds,
      `${total} log reads in ${Math.round(rounds)} rounds: ${JSON.stringify([...reads])}`,
    );
    assert.equal(reads.get("GetLogEventsCommand") ?? 0, 0);
  });
});

Deno.test("a restarted fargate log mirror resumes after the last line written: no duplicate, no gap", async () => {
  await withMoto(async (moto, dir) => {
    const f = await fleet(moto, 3);
    const same = Date.now();
    // Lines 3 and 4 share a millisecond, and line 5 (written while the mirror is away) too.
    for (let i = 0; i < 3; i++) {
      await f.write(i, numbered(i, 1, 2), same - 10);
      await f.write(i, numbered(i, 3, 4), same);
    }
    const first = mirrorOf(moto, f, dir);
    try {
      await eventually("four lines everywhere", () => allHave(dir, f.pods, 4), 30_000);
    } finally {
      await first.stop();
    }
    for (let i = 0; i < 3; i++) {
      await f.write(i, numbered(i, 5, 5), same);
      await f.write(i, numbered(i, 6, 8), same + 10);
    }
    const second = mirrorOf(moto, f, dir);
    try {
      await eventually("eight lines everywhere", () => allHave(dir, f.pods, 8), 30_000);
      await new Promise((r) => setTimeout(r, 3 * INTERVAL_MS));
      for (let i = 0; i < 3; i++) {
        assert.deepEqual(await linesOf(dir, f.pods[i]), numbered(i, 1, 8), `container ${i}`);
      }
    } finally {
      await second.stop();
    }
  });
});
