/**
 * One subject at one size, on a fresh control plane: scenario 1 (create N pods bound to the
 * node, until all Running), 2 (settle: until the kubelet's request rate is idle, see
 * settle.ts), 3 (steady state), 4 (restart the kubelet, until reconciled) and 5 (delete them all,
 * until gone), numbered in the order they run, on one set of pods. The driver's requests
 * (creates, deletes, one watch) are the same for every subject.
 * @module
 */
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  issueKubeletIdentity,
  startControlPlane,
  stopControlPlane,
} from "../tools/control_plane.ts";
import { Kube, KubeError, pool } from "../tools/kube.ts";
import { kubeletRequests, type MetricsSnapshot, scrape, verbDeltas } from "../tools/metrics.ts";
import { cpuSeconds, machine, memoryMiB } from "../tools/proc.ts";
import { type Settle, waitSettled } from "./settle.ts";
import {
  NODE_NAME,
  type RunningSubject,
  startSubject,
  type SubjectName,
} from "../tools/subjects.ts";
import { PodTracker } from "../tools/tracker.ts";
import { freePort } from "../../tools/cluster/ports.ts";

/** Knobs of one run. */
export interface RunOptions {
  steadySeconds: number;
  /** Requests in flight while the driver creates or deletes pods. */
  createConcurrency: number;
  qps?: number;
  peerBinary: string;
  outDir: string;
  progress: (line: string) => void;
}

/** A phase that waits for all N pods: how long, and how many made it. */
export interface Phase {
  seconds: number;
  done: number;
  timedOut: boolean;
  /** The kubelet's requests during the phase (apiserver's count). */
  requests: number;
  /**
   * The kubelet process's CPU seconds during the phase (user + system, `/proc/PID/stat`): what
   * the kubelet itself spent, apart from the apiserver it shares the cores with. Absent in
   * results from before it was measured.
   */
  cpuSeconds?: number;
}

/** Everything measured for one subject at one size. */
export interface RunResult {
  subject: SubjectName;
  n: number;
  startupSeconds: number;
  create: Phase & {
    p50: number;
    p99: number;
    /** Seconds the driver needed to send all creates. */
    createSeconds: number;
    /** [seconds since the first create, pods Running], for the chart. */
    curve: [number, number][];
    verbs: [string, number][];
  };
  /** From all Running until the kubelet is idle (absent in results from before the step). */
  settle?: Settle;
  steady: {
    seconds: number;
    cpuPerMinute: number;
    rssMiB: number;
    peakMiB: number;
    requestsPerMinute: number;
  };
  restart: Phase & { regressions: number; statusWrites: number; verbs: [string, number][] };
  remove: Phase & { verbs: [string, number][] };
  /** Kubelet crashes seen (the process exited without being stopped), with the scenario. */
  crashes?: string[];
  /** When this subject and size finished (ISO time). */
  finishedAt?: string;
  /** The machine's 1-minute load average just before scenario 1 (other work shares the cores). */
  loadAtCreate?: number;
  error?: string;
}

const NAMESPACE = "bench";

function podManifest(i: number): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: `p-${String(i).padStart(5, "0")}`, labels: { app: "bench" } },
    spec: {
      nodeName: NODE_NAME,
      automountServiceAccountToken: false,
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
      containers: [{ name: "c", image: "bench/image:1" }],
    },
  };
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

/** How long any one phase may wait for all N pods. */
export function phaseTimeoutMs(n: number): number {
  return 60_000 + n * 30;
}

/**
 * How long the settle step may wait: longer than a phase, because a kubelet that sends the
 * kubelet's two events per pod at its default 50/s needs N / 25 s for them (400 s at 10,000).
 */
export function settleTimeoutMs(n: number): number {
  return 60_000 + n * 50;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitNodeReady(
  admin: Kube,
  running: RunningSubject,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    // runSubject's catch names the exit code and the log.
    if (running.exitCode !== undefined) throw new Error("its node was not Ready yet");
    try {
      const node = await admin.request<
        { status?: { conditions?: { type: string; status: string }[] } }
      >(
        "GET",
        `/api/v1/nodes/${NODE_NAME}`,
      );
      if (node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return;
    } catch (err) {
      if (!(err instanceof KubeError && err.status === 404)) throw err;
    }
    await sleep(100);
  }
  throw new Error("the node did not become Ready in time");
}

/** Pods the kubelet's provider holds, from its `/runningpods/`; undefined when unreachable. */
async function runningPodsCount(
  client: Deno.HttpClient,
  port: number,
): Promise<number | undefined> {
  try {
    const res = await fetch(`https://127.0.0.1:${port}/runningpods/`, {
      client,
      signal: AbortSignal.timeout(30_000),
    });
    if (!res.ok) {
      await res.body?.cancel();
      return undefined;
    }
    return ((await res.json()).items ?? []).length;
  } catch {
    return undefined;
  }
}

/** Runs scenarios 1 to 5, in that order, for one subject at size `n`. */
export async function runSubject(
  subject: SubjectName,
  n: number,
  options: RunOptions,
): Promise<RunResult> {
  const { progress } = options;
  const say = (line: string) => progress(`[${subject} N=${n}] ${line}`);
  say("starting a fresh control plane");
  const cp = await startControlPlane(say);
  const workDir = `${options.outDir}/work/${subject}-${n}`;
  const identity = await issueKubeletIdentity(cp, workDir);
  const admin = new Kube(cp.admin);
  const kubeletApiClient = Deno.createHttpClient({
    caCerts: [cp.admin.ca],
    cert: cp.admin.cert,
    key: cp.admin.key,
  });
  await admin.request("POST", "/api/v1/namespaces", {
    body: { metadata: { name: NAMESPACE } },
  });
  // Pods are refused until the service-account controller has made "default".
  for (let i = 0; i < 300; i++) {
    try {
      await admin.request("GET", `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/default`);
      break;
    } catch {
      await sleep(100);
    }
  }
  const tracker = new PodTracker(admin, NAMESPACE);
  const port = freePort();
  const spec = {
    name: subject,
    identity,
    server: cp.server,
    workDir,
    peerBinary: options.peerBinary,
    qps: options.qps,
    port,
    logFile: `${options.outDir}/logs/${subject}-${n}.log`,
  };
  await Deno.mkdir(`${options.outDir}/logs`, { recursive: true });
  const result: RunResult = {
    subject,
    n,
    startupSeconds: NaN,
    create: {
      seconds: NaN,
      done: 0,
      timedOut: false,
      requests: NaN,
      p50: NaN,
      p99: NaN,
      createSeconds: NaN,
      curve: [],
      verbs: [],
    },
    steady: { seconds: 0, cpuPerMinute: NaN, rssMiB: NaN, peakMiB: NaN, requestsPerMinute: NaN },
    restart: {
      seconds: NaN,
      done: 0,
      timedOut: false,
      requests: NaN,
      regressions: 0,
      statusWrites: 0,
      verbs: [],
    },
    remove: { seconds: NaN, done: 0, timedOut: false, requests: NaN, verbs: [] },
  };
  let running: RunningSubject | undefined;
  try {
    const started = performance.now();
    running = await startSubject(spec);
    await waitNodeReady(admin, running, AbortSignal.timeout(120_000));
    result.startupSeconds = (performance.now() - started) / 1000;
    say(`node Ready after ${result.startupSeconds.toFixed(1)} s`);
    await sleep(2000);

    await scenarioCreate(result, admin, tracker, running.pid, options, say);
    await settleStep(result, admin, running, say);
    await scenarioSteady(result, admin, running, options, say);
    running = await scenarioRestart(result, admin, tracker, running, spec, kubeletApiClient, say);
    if (running.exitCode !== undefined) {
      // As a supervisor would: start it again so that scenario 5 measures a live kubelet.
      (result.crashes ??= []).push(`scenario 4 (exit ${running.exitCode})`);
      say(`the kubelet exited (code ${running.exitCode}) during scenario 4; starting it again`);
      running = await startSubject(spec);
      await waitNodeReady(admin, running, AbortSignal.timeout(120_000));
    }
    await scenarioDelete(result, admin, tracker, running.pid, options, say);
    if (running.exitCode !== undefined) {
      (result.crashes ??= []).push(`scenario 5 (exit ${running.exitCode})`);
    }
    const mem = memoryMiB(running.pid);
    result.steady.peakMiB = Math.max(result.steady.peakMiB, mem.peak);
  } catch (err) {
    const message = String(err instanceof Error ? err.message : err);
    // A kubelet that died mid-scenario shows first as a failed read of its /proc files.
    const exited = running && await Promise.race([
      running.exited.then((status) => status.code),
      sleep(1000).then(() => undefined),
    ]);
    result.error = exited === undefined
      ? message
      : `the kubelet exited (code ${exited}); see ${spec.logFile} (${message})`;
    say(`failed: ${result.error}`);
  } finally {
    // Clean-up must not hang the bench: each step gets a deadline.
    const bounded = async (what: string, p: Promise<unknown>) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const giveUp = new Promise<void>((resolve) => {
        timer = setTimeout(() => resolve(say(`gave up waiting for ${what}`)), 30_000);
      });
      try {
        await Promise.race([p, giveUp]);
      } finally {
        clearTimeout(timer);
      }
    };
    await bounded("the kubelet to stop", running?.stop() ?? Promise.resolve());
    await bounded("the pod watch to end", tracker.close());
    kubeletApiClient.close();
    admin.close();
    await stopControlPlane();
  }
  result.finishedAt = new Date().toISOString();
  return result;
}

function progressTicker(say: (line: string) => void, what: string, count: () => number, n: number) {
  const started = performance.now();
  const timer = setInterval(() => {
    const s = ((performance.now() - started) / 1000).toFixed(0);
    say(`${what}: ${count()}/${n} after ${s} s`);
  }, 5000);
  return () => clearInterval(timer);
}

async function scenarioCreate(
  result: RunResult,
  admin: Kube,
  tracker: PodTracker,
  pid: number,
  options: RunOptions,
  say: (line: string) => void,
): Promise<void> {
  const { n } = result;
  const pods = Array.from({ length: n }, (_, i) => podManifest(i));
  const sentAt = new Map<string, number>();
  const before = await scrape(admin);
  result.loadAtCreate = Number(machine().load.split(" ")[0]);
  say(`scenario 1: creating ${n} pods (load average ${result.loadAtCreate})`);
  const stopTicker = progressTicker(say, "Running", () => tracker.runningAt.size, n);
  const cpu0 = cpuNow(pid);
  const t0 = performance.now();
  await pool(pods, options.createConcurrency, async (pod) => {
    sentAt.set(pod.metadata!.name!, performance.now());
    await admin.request("POST", `/api/v1/namespaces/${NAMESPACE}/pods`, { body: pod });
  });
  result.create.createSeconds = (performance.now() - t0) / 1000;
  const ok = await tracker.until(
    () => tracker.runningAt.size >= n,
    AbortSignal.timeout(phaseTimeoutMs(n)),
  );
  stopTicker();
  const latencies: number[] = [];
  let last = t0;
  for (const [name, at] of tracker.runningAt) {
    const sent = sentAt.get(name);
    if (sent !== undefined) latencies.push((at - sent) / 1000);
    last = Math.max(last, at);
  }
  latencies.sort((a, b) => a - b);
  // The chart's curve: every pod's Running time, thinned to at most ~400 points.
  const times = [...tracker.runningAt.values()].map((at) => (at - t0) / 1000).sort((a, b) => a - b);
  const every = Math.max(1, Math.floor(times.length / 400));
  result.create.curve = times.flatMap((t, i) =>
    i % every === 0 || i === times.length - 1 ? [[t, i + 1] as [number, number]] : []
  );
  const after = await scrape(admin);
  Object.assign(result.create, {
    seconds: (last - t0) / 1000,
    done: tracker.runningAt.size,
    timedOut: !ok,
    requests: kubeletRequests(before, after),
    cpuSeconds: cpuSince(pid, cpu0),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    verbs: verbDeltas(before, after, Math.max(5, n / 20)),
  });
  say(
    `scenario 1: ${result.create.done}/${n} Running in ${result.create.seconds.toFixed(1)} s` +
      ` (creates sent in ${result.create.createSeconds.toFixed(1)} s; p50 ${
        result.create.p50.toFixed(2)
      } s, p99 ${result.create.p99.toFixed(2)} s; ${result.create.requests} kubelet requests)`,
  );
}

/** The CPU seconds of `pid` so far; undefined once it has exited (a crash is reported apart). */
function cpuNow(pid: number): number | undefined {
  try {
    return cpuSeconds(pid);
  } catch {
    return undefined;
  }
}

function cpuSince(pid: number, before: number | undefined): number | undefined {
  const now = cpuNow(pid);
  return now === undefined || before === undefined ? undefined : now - before;
}

async function settleStep(
  result: RunResult,
  admin: Kube,
  running: RunningSubject,
  say: (line: string) => void,
): Promise<void> {
  const capMs = settleTimeoutMs(result.n);
  say(
    `scenario 2: settling, waiting up to ${
      capMs / 1000
    } s for the kubelet's requests to fall to idle`,
  );
  const start = await scrape(admin);
  const { pid } = running;
  result.settle = await waitSettled({
    requests: async () => kubeletRequests(start, await scrape(admin)),
    cpuSeconds: () => cpuSeconds(pid),
    now: () => performance.now(),
    sleep,
    say,
  }, capMs);
}

async function scenarioSteady(
  result: RunResult,
  admin: Kube,
  running: RunningSubject,
  options: RunOptions,
  say: (line: string) => void,
): Promise<void> {
  say(`scenario 3: steady state for ${options.steadySeconds} s`);
  const before: MetricsSnapshot = await scrape(admin);
  const cpu0 = cpuSeconds(running.pid);
  const t0 = performance.now();
  await sleep(options.steadySeconds * 1000);
  const cpu1 = cpuSeconds(running.pid);
  const minutes = (performance.now() - t0) / 60_000;
  const after = await scrape(admin);
  const mem = memoryMiB(running.pid);
  result.steady = {
    seconds: minutes * 60,
    cpuPerMinute: (cpu1 - cpu0) / minutes,
    rssMiB: mem.rss,
    peakMiB: mem.peak,
    requestsPerMinute: kubeletRequests(before, after) / minutes,
  };
  say(
    `scenario 3: ${result.steady.cpuPerMinute.toFixed(2)} CPU s/min, RSS ${
      mem.rss.toFixed(0)
    } MiB (peak ${mem.peak.toFixed(0)}), ${
      result.steady.requestsPerMinute.toFixed(1)
    } requests/min`,
  );
}

async function scenarioRestart(
  result: RunResult,
  admin: Kube,
  tracker: PodTracker,
  running: RunningSubject,
  spec: Parameters<typeof startSubject>[0],
  kubeletApiClient: Deno.HttpClient,
  say: (line: string) => void,
): Promise<RunningSubject> {
  const { n } = result;
  say("scenario 4: restarting the kubelet");
  const peakBefore = memoryMiB(running.pid).peak;
  await running.stop();
  const before = await scrape(admin);
  tracker.openWindow();
  const t0 = performance.now();
  const next = await startSubject(spec);
  const signal = AbortSignal.timeout(phaseTimeoutMs(n));
  let reconciled = 0;
  const stopTicker = progressTicker(say, "reconciled", () => reconciled, n);
  // The floor and vkubelet each say when they have handled the pods they listed at start: their
  // lines are read every 50 ms. The peer says nothing of the kind, so its /runningpods/ is asked
  // every 0.5 s, longer at large N (each answer lists every pod and costs the kubelet CPU);
  // vkubelet's count is checked there too once it has said so.
  const pollMs = Math.max(500, n / 5);
  let ok = false;
  let saidAt: number | undefined;
  let cpuWhenSaid: number | undefined;
  let checked = false;
  while (!signal.aborted && next.exitCode === undefined) {
    let waitMs = 50;
    if (spec.name === "floor") {
      const line = next.lines.find((l) => l.startsWith("reconciled "));
      reconciled = line ? Number(line.split(" ")[1]) : 0;
    } else if (spec.name === "vkubelet") {
      const line = next.lines.find((l) => l.includes("start-up synced: "));
      if (line) {
        const seenAt = performance.now();
        // Before asking /runningpods/, whose answer costs the kubelet CPU the bench caused.
        const cpuAt = cpuNow(next.pid);
        const listed = Number(/start-up synced: (\d+) /.exec(line)?.[1] ?? 0);
        reconciled = (await runningPodsCount(kubeletApiClient, spec.port)) ?? 0;
        // Its word counts only if its provider held them all when it said so.
        if (!checked && listed >= n && reconciled >= n) {
          saidAt = seenAt;
          cpuWhenSaid = cpuAt;
        }
        checked = true;
        waitMs = pollMs;
      }
    } else {
      reconciled = (await runningPodsCount(kubeletApiClient, spec.port)) ?? 0;
      waitMs = pollMs;
    }
    if (reconciled >= n) {
      ok = true;
      break;
    }
    await sleep(waitMs);
  }
  // vkubelet's time is when it said so, if its provider then held them all; else when it did.
  const seconds = ((saidAt ?? performance.now()) - t0) / 1000;
  // The new process's CPU from its start (startup included) until all were reconciled.
  const restartCpu = cpuWhenSaid ?? cpuNow(next.pid);
  stopTicker();
  // Status writes that follow the provider's re-creation land within a moment; let them.
  await sleep(3000);
  const after = await scrape(admin);
  result.restart = {
    seconds,
    done: reconciled,
    timedOut: !ok,
    requests: kubeletRequests(before, after),
    cpuSeconds: restartCpu,
    regressions: tracker.regressions.size,
    statusWrites: tracker.statusWrites.size,
    verbs: verbDeltas(before, after, Math.max(5, n / 20)),
  };
  result.steady.peakMiB = Math.max(result.steady.peakMiB, peakBefore);
  say(
    `scenario 4: ${reconciled}/${n} reconciled in ${
      seconds.toFixed(1)
    } s; ${tracker.regressions.size} status regressions, ${tracker.statusWrites.size} pods' status rewritten`,
  );
  return next;
}

async function scenarioDelete(
  result: RunResult,
  admin: Kube,
  tracker: PodTracker,
  pid: number,
  options: RunOptions,
  say: (line: string) => void,
): Promise<void> {
  const { n } = result;
  const names = [...tracker.runningAt.keys()];
  say(`scenario 5: deleting ${names.length} pods`);
  const before = await scrape(admin);
  const stopTicker = progressTicker(say, "gone", () => tracker.goneAt.size, n);
  const cpu0 = cpuNow(pid);
  const t0 = performance.now();
  await pool(names, options.createConcurrency, async (name) => {
    try {
      await admin.request("DELETE", `/api/v1/namespaces/${NAMESPACE}/pods/${name}`);
    } catch (err) {
      if (!(err instanceof KubeError && err.status === 404)) throw err;
    }
  });
  const ok = await tracker.until(
    () => tracker.goneAt.size >= names.length,
    AbortSignal.timeout(phaseTimeoutMs(n)),
  );
  stopTicker();
  let last = t0;
  for (const at of tracker.goneAt.values()) last = Math.max(last, at);
  const after = await scrape(admin);
  result.remove = {
    seconds: (last - t0) / 1000,
    done: tracker.goneAt.size,
    timedOut: !ok,
    requests: kubeletRequests(before, after),
    cpuSeconds: cpuSince(pid, cpu0),
    verbs: verbDeltas(before, after, Math.max(5, n / 20)),
  };
  say(`scenario 5: ${tracker.goneAt.size}/${n} gone in ${result.remove.seconds.toFixed(1)} s`);
}
