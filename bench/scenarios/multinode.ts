/**
 * `deno task bench --nodes N --pods P`: many virtual nodes in one vkubelet process (mock
 * provider, `--nodes`) and, with `--subjects vkubelet,kwok`, KWOK managing as many nodes. Each
 * subject gets a fresh bench control plane of its own (cluster `vkbench-multinode` unless
 * VKBENCH_CLUSTER names another, so that it never stops the `vkbench` cluster of a running
 * `deno task bench`). Reports the time to all nodes Ready, the time to all pods Running (pods
 * bound round-robin with `spec.nodeName`, so the scheduler is not what is measured), the worst
 * node-Lease renewal gap over a window, and the process's RSS and CPU.
 *
 *   deno task bench --nodes 1000 --pods 10000 [--window-seconds 600]
 *                   [--subjects vkubelet,kwok] [--qps 500] [--concurrency 32] [--keep-cluster]
 *
 * Figures go to stderr and bench/out/multinode-<N>x<P>.json (git-ignored).
 * @module
 */
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import type { Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { Kube, pool } from "../tools/kube.ts";
import {
  MULTI_NODE_SUBJECTS,
  type MultiNodeSubject,
  type StartedSubject,
  startMultiNodeSubject,
} from "../tools/multinode_subjects.ts";
import { cpuSeconds, machine, memoryMiB } from "../tools/proc.ts";
import { realClock } from "../../base/clock.ts";

/** The flags of the multi-node scenario. */
export interface MultiNodeFlags {
  nodes: number;
  pods: number;
  windowSeconds: number;
  qps: number;
  concurrency: number;
  keepCluster: boolean;
  subjects: MultiNodeSubject[];
}

const RENEW_INTERVAL_S = 10; // a quarter of the 40 s lease, for vkubelet and KWOK alike
const PREFIX = "vkbench-mn-";
const NAMESPACE = "bench";
const repoRoot = new URL("../../", import.meta.url).pathname;
const outDir = Deno.env.get("VKBENCH_OUT") ?? `${repoRoot}bench/out`;

/** Parses the flags; throws a RangeError naming the bad one. */
export function parseMultiNodeFlags(args: string[]): MultiNodeFlags {
  const flags = { nodes: 1000, pods: 10000, windowSeconds: 600, qps: 500, concurrency: 32 };
  let keepCluster = false;
  let subjects: MultiNodeSubject[] = ["vkubelet"];
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i].split("=", 2);
    const key = ({
      "--nodes": "nodes",
      "--pods": "pods",
      "--window-seconds": "windowSeconds",
      "--qps": "qps",
      "--concurrency": "concurrency",
    } as const)[name];
    if (name === "--keep-cluster") {
      keepCluster = true;
      continue;
    }
    if (name === "--subjects") {
      subjects = (inline ?? args[++i] ?? "").split(",") as MultiNodeSubject[];
      const bad = subjects.find((x) => !MULTI_NODE_SUBJECTS.includes(x));
      if (bad) throw new RangeError(`--subjects: unknown subject ${bad} (vkubelet, kwok)`);
      continue;
    }
    if (!key) {
      throw new RangeError(`unknown option ${args[i]} (with --nodes: ${Object.keys(flags)})`);
    }
    const n = Number(inline ?? args[++i]);
    if (!Number.isInteger(n) || n < 0 || (key !== "pods" && n === 0)) {
      throw new RangeError(`${name} needs a positive whole number`);
    }
    flags[key] = n;
  }
  return { ...flags, keepCluster, subjects };
}

const encoder = new TextEncoder();
const started = performance.now();
function say(line: string): void {
  const t = ((performance.now() - started) / 1000).toFixed(0).padStart(5);
  Deno.stderr.writeSync(encoder.encode(`[bench-multinode ${t}s] ${line}\n`));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it is true or `timeoutMs` passes; false on timeout. */
async function until(check: () => Promise<boolean>, everyMs: number, timeoutMs: number) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await sleep(everyMs);
  }
  return false;
}

/** Runs the scenario; resolves to the exit code. */
export async function main(args: string[]): Promise<number> {
  let flags: MultiNodeFlags;
  try {
    flags = parseMultiNodeFlags(args);
  } catch (err) {
    say((err as Error).message);
    return 2;
  }
  // Before control_plane.ts reads it: never the cluster another bench run may be using.
  if (!Deno.env.get("VKBENCH_CLUSTER")) Deno.env.set("VKBENCH_CLUSTER", "vkbench-multinode");
  const cp = await import("../tools/control_plane.ts");
  const { nodes: N, pods: P } = flags;
  const names = Array.from({ length: N }, (_, i) => `${PREFIX}${String(i).padStart(4, "0")}`);
  const results: Record<string, unknown>[] = [];
  for (const subject of flags.subjects) {
    const workDir = `${outDir}/multinode/${subject}`;
    await Deno.mkdir(workDir, { recursive: true });
    say(`${subject}: starting a fresh control plane (${Deno.env.get("VKBENCH_CLUSTER")})`);
    const plane = await cp.startControlPlane(say);
    const admin = new Kube(plane.admin);
    try {
      const started = await startMultiNodeSubject({
        subject,
        names,
        identity: await cp.issueKubeletIdentity(plane, workDir),
        admin,
        workDir,
        qps: flags.qps,
        concurrency: flags.concurrency,
        progress: say,
      });
      try {
        results.push(await measure(subject, started, admin, names, flags));
      } finally {
        await started.stop();
      }
    } finally {
      admin.close();
      if (!flags.keepCluster) await cp.stopControlPlane();
    }
  }
  const file = `${outDir}/multinode-${N}x${P}.json`;
  await Deno.writeTextFile(
    file,
    JSON.stringify({ flags, machine: machine(), at: new Date().toISOString(), results }, null, 2),
  );
  say(`wrote ${file}`);
  return 0;
}

/** Nodes Ready, pods Running, then the steady window, for one started subject. */
async function measure(
  subject: MultiNodeSubject,
  started: StartedSubject,
  admin: Kube,
  names: string[],
  flags: MultiNodeFlags,
): Promise<Record<string, unknown>> {
  const { pid } = started;
  const N = names.length, P = flags.pods;
  const say2 = (line: string) => say(`${subject}: ${line}`);
  const result: Record<string, unknown> = { subject };
  // 1. All nodes Ready.
  const ready = await until(
    async () => {
      const list = await admin.request<{ items: Node[] }>("GET", "/api/v1/nodes");
      const count = list.items.filter((n) =>
        n.metadata?.name?.startsWith(PREFIX) &&
        n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
      ).length;
      return count === N;
    },
    1_000,
    600_000,
  );
  result.nodesReadySeconds = ready ? (performance.now() - started.startedAt) / 1000 : NaN;
  result.afterReady = { ...memoryMiB(pid), cpuSeconds: cpuSeconds(pid) };
  say2(`${N} nodes Ready: ${seconds(result.nodesReadySeconds)}; ${fmtMem(pid)}`);
  // 2. All pods Running.
  await admin.request("POST", "/api/v1/namespaces", {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } },
  }).catch(() => {});
  // Pods are refused until the namespace's default ServiceAccount exists.
  await until(
    async () => {
      await admin.request("GET", `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/default`);
      return true;
    },
    200,
    60_000,
  );
  const t1 = performance.now();
  const cpu1 = cpuSeconds(pid);
  // The leases are watched while the pods are created too: the apiserver is busiest then.
  const creating = new AbortController();
  const creationLeases = leaseWindow(admin, N, Infinity, pid, creating.signal);
  await pool(Array.from({ length: P }, (_, i) => i), flags.concurrency, async (i) => {
    await admin.request("POST", `/api/v1/namespaces/${NAMESPACE}/pods`, {
      body: pod(i, names[i % N]),
    });
  });
  const running = await until(
    async () => {
      const list = await admin.request<{ items: Pod[] }>(
        "GET",
        `/api/v1/namespaces/${NAMESPACE}/pods?fieldSelector=status.phase%3DRunning`,
      );
      return list.items.length === P;
    },
    2_000,
    1_200_000,
  );
  result.podsRunningSeconds = running ? (performance.now() - t1) / 1000 : NaN;
  result.createCpuSeconds = cpuSeconds(pid) - cpu1;
  creating.abort();
  const during = await creationLeases;
  result.creationLeases = {
    worstGapSeconds: during.worstGapSeconds,
    p99GapSeconds: during.p99GapSeconds,
    gapsOver15s: during.gapsOver15s,
    worstAgeSeconds: during.worstAgeSeconds,
    renewals: during.renewals,
  };
  // With no pods (or a creation shorter than a renewal interval) no Lease was renewed twice.
  const renewalsWhileCreating = Number.isNaN(during.p99GapSeconds)
    ? "no Lease renewed twice"
    : `worst renewal gap ${during.worstGapSeconds.toFixed(2)} s (p99 ` +
      `${during.p99GapSeconds.toFixed(2)} s, ${during.gapsOver15s} over 15 s)`;
  say2(
    `${P} pods Running: ${seconds(result.podsRunningSeconds)}; ${fmtMem(pid)}; while creating: ` +
      `${renewalsWhileCreating}, oldest lease seen ${during.worstAgeSeconds.toFixed(1)} s`,
  );
  // 3. Steady window: every lease's renewals, RSS and CPU.
  const lag = await leaseWindow(admin, N, flags.windowSeconds, pid);
  Object.assign(result, lag);
  result.end = memoryMiB(pid);
  say2(
    `window ${flags.windowSeconds} s: worst renewal gap ${lag.worstGapSeconds.toFixed(2)} s ` +
      `(${(lag.worstGapSeconds - RENEW_INTERVAL_S).toFixed(2)} s over the ${RENEW_INTERVAL_S} s ` +
      `interval; p50 ${lag.p50GapSeconds.toFixed(2)} s, p99 ${lag.p99GapSeconds.toFixed(2)} s, ` +
      `${lag.gapsOver15s} over 15 s), oldest lease seen ${
        lag.worstAgeSeconds.toFixed(1)
      } s, ${lag.renewals} ` +
      `renewals of ${lag.leasesSeen} leases, CPU ${lag.cpuPercent.toFixed(1)} % of one core; ` +
      fmtMem(pid),
  );
  return result;
}

function seconds(value: unknown): string {
  return Number.isNaN(value) ? "timed out" : `${(value as number).toFixed(1)} s`;
}

/** Watches every lease for `seconds`, or until `signal` aborts, by listing them every 2 s. */
async function leaseWindow(
  admin: Kube,
  n: number,
  seconds: number,
  pid: number,
  signal?: AbortSignal,
) {
  const last = new Map<string, number>();
  let worstGap = 0, worstAge = 0, renewals = 0, peakRss = 0, failedPolls = 0;
  const gaps: number[] = [];
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000 && !signal?.aborted) {
    const list = await admin.request<{ items: Lease[] }>(
      "GET",
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
    ).catch((err) => {
      // A poll that fails is counted, not fatal: the gaps still show what the leases did.
      failedPolls++;
      say(`listing leases failed: ${err instanceof Error ? err.message : err}`);
      return { items: [] as Lease[] };
    });
    const now = Date.now();
    for (const lease of list.items) {
      const name = lease.metadata?.name ?? "";
      if (!name.startsWith(PREFIX) || !lease.spec?.renewTime) continue;
      const renewed = Date.parse(lease.spec.renewTime);
      worstAge = Math.max(worstAge, (now - renewed) / 1000);
      const previous = last.get(name);
      if (previous !== undefined && renewed > previous) {
        worstGap = Math.max(worstGap, (renewed - previous) / 1000);
        gaps.push((renewed - previous) / 1000);
        renewals++;
      }
      last.set(name, renewed);
    }
    peakRss = Math.max(peakRss, memoryMiB(pid).rss);
    await realClock.sleep(2_000, signal).catch(() => {}); // Ends early when `signal` aborts.
  }
  const wall = (performance.now() - t0) / 1000;
  return {
    leasesSeen: last.size,
    expectedLeases: n,
    worstGapSeconds: worstGap,
    ...gapPercentiles(gaps),
    /** Renewals more than 5 s late (a gap over 15 s). */
    gapsOver15s: gaps.filter((g) => g > 15).length,
    worstAgeSeconds: worstAge,
    renewals,
    failedPolls,
    windowRssPeakMiB: peakRss,
    cpuPercent: ((cpuSeconds(pid) - cpu0) / wall) * 100,
  };
}

/** The median and 99th percentile renewal gap (s). */
function gapPercentiles(gaps: number[]): { p50GapSeconds: number; p99GapSeconds: number } {
  const sorted = [...gaps].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : NaN;
  return { p50GapSeconds: at(0.5), p99GapSeconds: at(0.99) };
}

function pod(i: number, nodeName: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: `p-${String(i).padStart(5, "0")}`, labels: { app: "bench" } },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
      containers: [{ name: "c", image: "bench/image:1" }],
    },
  };
}

function fmtMem(pid: number): string {
  const { rss, peak } = memoryMiB(pid);
  return `RSS ${rss.toFixed(0)} MiB (peak ${peak.toFixed(0)}), CPU ${cpuSeconds(pid).toFixed(1)} s`;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
