/**
 * `deno run -A bench/scenarios/log_polling.ts [--containers=200] [--seconds=60] [--every=5]`:
 * what the node's log mirror asks of CloudWatch Logs for `--containers` followed fargate
 * containers (issue 65 item 2, "backends polled in batches where following is costly"), with moto
 * as CloudWatch Logs, loopback only, no control plane. Two runs on the same streams:
 *
 * - **per-container follow** (`logMirror: follow`): each container's own GetLogEvents follow,
 *   polled every second, as `kubectl logs -f` reads it;
 * - **batched** (`logMirror: batched`, the default): one FilterLogEvents per log group and 100
 *   streams a round, at the shipped `logMirrorInterval` (2 s) and `logMirrorRequestsPerSecond` (1).
 *
 * Each run follows every container for `--seconds` while one line is written into every stream
 * every `--every` seconds (as the awslogs driver would), counts the log reads the SDK sent (by
 * operation, through a middleware on the client), checks that every line written reached its
 * container's `0.log` once and in order, and times the last line's arrival after the run. Prints a
 * table and writes bench/reports/LOG_POLLING.md's figures section to stdout (pasted by hand).
 * moto answers as fast as two shared cores let it, so the per-container figure is the rate moto
 * sustained, not the rate vkubelet would ask of AWS (which would throttle it at 5/s per account
 * for FilterLogEvents and refuse most of the GetLogEvents too).
 * @module
 */
import { parseArgs } from "node:util";
import {
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  PutLogEventsCommand,
} from "@aws-sdk/client-cloudwatch-logs";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { realClock } from "../../base/clock.ts";
import { LogMirror } from "../../provider/log_mirror.ts";
import { type Logger, PodLogDir, readContainerLog } from "../../provider/mod.ts";
import { FargateBackend, type FargateBackendDeps } from "../../providers/fargate/backend.ts";
import { parseFargateConfig } from "../../providers/fargate/config.ts";
import { type Moto, startMoto } from "../../tools/harness/moto.ts";

const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
const quiet: Logger = { debug() {}, info() {}, warn() {}, warning() {}, error() {} };

interface Result {
  mode: "follow" | "batched";
  seconds: number;
  reads: Record<string, number>;
  perMinute: number;
  written: number;
  arrived: number;
  wrong: number;
  lastLineMs: number;
}

async function oneRun(
  moto: Moto,
  mode: Result["mode"],
  n: number,
  seconds: number,
  everyS: number,
): Promise<Result> {
  const group = `/vkubelet/bench-${mode}`;
  await moto.logs.send(new CreateLogGroupCommand({ logGroupName: group }));
  const pods: Pod[] = [];
  for (let i = 0; i < n; i++) {
    await moto.logs.send(
      new CreateLogStreamCommand({ logGroupName: group, logStreamName: `vk/app/t${i}` }),
    );
    pods.push({
      metadata: { namespace: "bench", name: `p${i}`, uid: `${mode}-${i}` },
      spec: { containers: [{ name: "app", image: "busybox" }] },
      status: {
        containerStatuses: [{
          name: "app",
          image: "busybox",
          imageID: "",
          ready: true,
          restartCount: 0,
          state: { running: {} },
        }],
      },
    });
  }
  const parsed = parseFargateConfig({
    region: moto.region,
    endpoint: moto.endpoint,
    subnets: [moto.subnet],
    executionRoleArn: "arn:aws:iam::123456789012:role/ecsTaskExecutionRole",
    logGroup: group,
    logMirror: mode,
  });
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const root = await Deno.makeTempDir({ prefix: "vk-bench-log-polling-" });
  const dir = new PodLogDir({
    dir: `${root}/pods`,
    linkDir: `${root}/containers`,
    maxBytes: 10 << 20,
    maxFiles: 2,
    clock: realClock,
    nodeName: "vk-bench",
    maxStreams: n,
  });
  const life = new AbortController();
  const backend = new FargateBackend({
    ecs: {} as FargateBackendDeps["ecs"],
    secrets: {} as FargateBackendDeps["secrets"],
    logs: moto.logs,
    config: parsed.config,
    nodeName: "vk-bench",
    clock: realClock,
    event: () => {},
    log: quiet,
    signal: life.signal,
  });
  const byName = new Map(pods.map((p, i) => [p.metadata!.name!, i]));
  const taskArn = (i: number) => `arn:aws:ecs:${moto.region}:123456789012:task/vk/t${i}`;
  const mirror = new LogMirror({
    dir,
    logs: (ref, o) => {
      const i = byName.get(ref.pod)!;
      const current = { pod: pods[i], containers: {}, handle: { taskArn: taskArn(i) } };
      return backend.mirrorLogs(pods[i], ref.container, o, { current });
    },
    clock: realClock,
    log: quiet,
  });
  const reads: Record<string, number> = {};
  let counting = false;
  const name = `count-${mode}`;
  moto.logs.middlewareStack.add((next, context) => (args) => {
    const op = context.commandName ?? "";
    if (counting && /^(FilterLogEvents|GetLogEvents)Command$/.test(op)) {
      reads[op.replace(/Command$/, "")] = (reads[op.replace(/Command$/, "")] ?? 0) + 1;
    }
    return next(args);
  }, { step: "initialize", name });
  let written = 0;
  const write = async (round: number) => {
    for (let i = 0; i < n; i++) {
      await moto.logs.send(
        new PutLogEventsCommand({
          logGroupName: group,
          logStreamName: `vk/app/t${i}`,
          logEvents: [{ timestamp: Date.now(), message: `c${i} line ${round}` }],
        }),
      );
      written++;
    }
  };
  const expected = (rounds: number) => (i: number) =>
    Array.from({ length: rounds }, (_, r) => `c${i} line ${r}`);
  const linesOf = async (i: number) => {
    const target = { namespace: "bench", pod: `p${i}`, uid: `${mode}-${i}`, container: "app" };
    const records = await readContainerLog(dir.logPath({ ...target, restartCount: 0 }))
      .catch(() => []);
    return records.map((r) => new TextDecoder().decode(r.text));
  };
  try {
    counting = true;
    const startedMs = Date.now();
    for (const pod of pods) mirror.observe(pod);
    let rounds = 0;
    while (Date.now() - startedMs < seconds * 1000) {
      await write(rounds++);
      await new Promise((r) => setTimeout(r, everyS * 1000));
    }
    const elapsedS = (Date.now() - startedMs) / 1000;
    counting = false;
    // The last round's lines: how long until every container has them.
    const lastWrittenMs = Date.now();
    await write(rounds++);
    const want = expected(rounds);
    let arrived = 0, wrong = 0;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const all = await Promise.all(pods.map((_, i) => linesOf(i)));
      if (all.every((l) => l.length >= rounds) || Date.now() > deadline) {
        arrived = all.reduce((a, l) => a + l.length, 0);
        wrong = all.filter((l, i) => JSON.stringify(l) !== JSON.stringify(want(i))).length;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const total = Object.values(reads).reduce((a, b) => a + b, 0);
    return {
      mode,
      seconds: elapsedS,
      reads,
      perMinute: total / elapsedS * 60,
      written,
      arrived,
      wrong,
      lastLineMs: Date.now() - lastWrittenMs,
    };
  } finally {
    await mirror.close();
    life.abort();
    await backend.logBatch?.idle();
    moto.logs.middlewareStack.remove(name);
    await Deno.remove(root, { recursive: true });
  }
}

function row(r: Result, n: number): string {
  const reads = Object.entries(r.reads).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
  return `| ${r.mode === "follow" ? "per-container follow" : "batched"} | ${n} | ${
    r.seconds.toFixed(0)
  } | ${reads} | ${Math.round(r.perMinute)} | ${r.arrived}/${r.written} | ${r.wrong} | ${
    (r.lastLineMs / 1000).toFixed(1)
  } |`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      containers: { type: "string", default: "200" },
      seconds: { type: "string", default: "60" },
      every: { type: "string", default: "5" },
    },
  });
  const [n, seconds, every] = [values.containers, values.seconds, values.every].map(Number);
  const load = async () =>
    (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  say(`log_polling: ${n} containers, ${seconds} s a run, a line each every ${every} s`);
  say(`load average before: ${await load()}`);
  const moto = await startMoto();
  const rows: string[] = [];
  try {
    for (const mode of ["follow", "batched"] as const) {
      const r = await oneRun(moto, mode, n, seconds, every);
      rows.push(row(r, n));
      say(rows.at(-1)!);
    }
  } finally {
    await moto.stop();
  }
  say("");
  say(
    "| mirror | containers | s | log reads | reads / min | lines in 0.log / written | containers wrong | last line after, s |",
  );
  say("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |");
  for (const r of rows) say(r);
  say(`load average after: ${await load()}`);
}
