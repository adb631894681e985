/**
 * `deno task bench --soak 60m`: vkubelet (mock provider) under a rolling churn at a fixed pod
 * count — a Deployment of `--pods` replicas whose template is changed every `--roll-seconds`, so
 * every pod is replaced each round — with its RSS, heap in use and CPU sampled every
 * `--sample-seconds`; writes bench/reports/SOAK.md and bench/reports/soak.png (`soak_report.ts`). Stops by itself
 * after the duration; loopback only. With `VKBENCH_INSPECT=127.0.0.1:PORT` and `--heap-at 3,12`
 * it takes heap snapshots when those rounds have rolled out (`heap.ts`), for retention, not speed.
 * @module
 */
import {
  attachControlPlane,
  type ControlPlane,
  issueKubeletIdentity,
  startControlPlane,
  stopControlPlane,
} from "../tools/control_plane.ts";
import { takeHeapSnapshot } from "../tools/heap.ts";
import { Kube } from "../tools/kube.ts";
import { brkHeapMiB, cpuSeconds, machine, memoryMiB } from "../tools/proc.ts";
import type { SoakFlags } from "../tools/soak_flags.ts";
import type { SoakSample } from "../tools/soak_stats.ts";
import { type RunningSubject, startSubject } from "../tools/subjects.ts";
import { freePort } from "../../tools/cluster/ports.ts";

/** What a soak run recorded, saved as soak.json and reported by `soak_report.ts`. */
export interface SoakResult {
  flags: SoakFlags;
  startedAt: string;
  machine: ReturnType<typeof machine>;
  /** Load average at the start and at the end. */
  load: [string, string];
  samples: SoakSample[];
  /** Seconds each round took to roll out fully; NaN when it had not by the next round. */
  rounds: number[];
  peakMiB: number;
  /** Set when vkubelet exited before the end. */
  exitCode?: number;
  heapSnapshots: { round: number; file: string; heapUsedMiB: number; rssMiB: number }[];
  /**
   * At rest: RSS and heap with no pods (node Ready, 20 s idle) and with all N pods at the end of
   * round 0 (created, then idle until the first roll), in MiB.
   */
  rest?: { empty: RestSample; full?: RestSample };
}

/** RSS and heap in use at one moment, in MiB. */
export interface RestSample {
  rssMiB: number;
  heapUsedMiB: number;
}

const NAMESPACE = "vksoak";
const DEPLOYMENT = "soak";
/** Its own node name, so that a soak on a shared cluster meets no other kubelet's pods. */
const SOAK_NODE = "vksoak-node";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function deployment(pods: number): unknown {
  const labels = { app: DEPLOYMENT };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: DEPLOYMENT, namespace: NAMESPACE },
    spec: {
      replicas: pods,
      selector: { matchLabels: labels },
      // 25% surge and 25% unavailable (the default): the pod count stays within 75–125% of N.
      strategy: { type: "RollingUpdate" },
      template: {
        metadata: { labels, annotations: { "vksoak/round": "0" } },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": SOAK_NODE },
          tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
          automountServiceAccountToken: false,
          containers: [{ name: "app", image: "soak:1" }],
        },
      },
    },
  };
}

interface DeploymentStatus {
  metadata: { generation: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
  };
}

/** True when every pod runs the newest template and the old ones are gone. */
function rolledOut(d: DeploymentStatus, pods: number): boolean {
  const s = d.status ?? {};
  return (s.observedGeneration ?? 0) >= d.metadata.generation && s.replicas === pods &&
    s.updatedReplicas === pods && s.availableReplicas === pods;
}

async function heapUsedMiB(metricsPort: number): Promise<number> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
      signal: AbortSignal.timeout(5000),
    })).text();
    return Number(/^vkubelet_heap_used_bytes (\S+)$/m.exec(text)?.[1]) / 1048576;
  } catch {
    return NaN;
  }
}

/** Runs the soak and returns what it recorded; cleans up its namespace, node and process. */
export async function runSoak(
  flags: SoakFlags,
  outDir: string,
  progress: (line: string) => void,
): Promise<SoakResult> {
  const cp: ControlPlane = flags.cluster
    ? await attachControlPlane(flags.cluster)
    : await startControlPlane(progress);
  const workDir = `${outDir}/work/soak`;
  const identity = await issueKubeletIdentity(cp, workDir);
  const admin = new Kube(cp.admin);
  const metricsPort = freePort();
  await Deno.mkdir(`${outDir}/logs`, { recursive: true });
  const result: SoakResult = {
    flags,
    startedAt: new Date().toISOString(),
    machine: machine(),
    load: [machine().load, ""],
    samples: [],
    rounds: [],
    peakMiB: NaN,
    heapSnapshots: [],
  };
  await cp.kubectl(["create", "namespace", NAMESPACE]).catch(() => {});
  let kubelet: RunningSubject | undefined;
  const stopSampling = new AbortController();
  try {
    kubelet = await startSubject({
      name: "vkubelet",
      identity,
      server: cp.server,
      workDir,
      qps: flags.qps,
      port: freePort(),
      logFile: `${outDir}/logs/soak.log`,
      nodeName: SOAK_NODE,
      extraArgs: ["--metrics-addr", `127.0.0.1:${metricsPort}`],
    });
    await waitReady(admin, AbortSignal.timeout(120_000));
    progress(`node ${SOAK_NODE} Ready; 20 s at rest with no pods`);
    await sleep(20_000);
    const atRest = async (): Promise<RestSample> => ({
      rssMiB: memoryMiB(kubelet!.pid).rss,
      heapUsedMiB: await heapUsedMiB(metricsPort),
    });
    result.rest = { empty: await atRest() };
    progress(`${flags.pods} pods rolled every ${flags.rollSeconds} s`);
    const path = `/apis/apps/v1/namespaces/${NAMESPACE}/deployments`;
    await admin.request("POST", path, { body: deployment(flags.pods) });
    const started = performance.now();
    const elapsed = () => (performance.now() - started) / 1000;
    let round = 0;
    const sampling = sample(
      kubelet,
      metricsPort,
      flags,
      () => round,
      elapsed,
      result,
      stopSampling.signal,
    );
    const inspect = Number(Deno.env.get("VKBENCH_INSPECT")?.split(":")[1]);
    while (elapsed() < flags.seconds && kubelet.exitCode === undefined) {
      const roundStart = elapsed();
      const deadline = Math.min(roundStart + flags.rollSeconds, flags.seconds);
      let done = NaN;
      while (elapsed() < deadline && kubelet.exitCode === undefined) {
        // A failed read (the apiserver restarting, say) is retried, not fatal: the soak goes on.
        const d = await admin.request<DeploymentStatus>("GET", `${path}/${DEPLOYMENT}`)
          .catch((err) => void progress(`reading the Deployment failed: ${err}`));
        if (d && rolledOut(d, flags.pods)) {
          done = elapsed() - roundStart;
          break;
        }
        await sleep(1000);
      }
      result.rounds.push(done);
      progress(
        `round ${round}: ${
          Number.isNaN(done) ? "not rolled out in time" : `rolled out in ${done.toFixed(1)} s`
        }; RSS ${memoryMiB(kubelet.pid).rss.toFixed(0)} MiB`,
      );
      if (flags.heapAt.includes(round) && !Number.isNaN(done)) {
        const file = `${outDir}/soak-round${round}`;
        const report = await takeHeapSnapshot(inspect, file);
        const mib = (b: number) => b / 1048576;
        result.heapSnapshots.push({
          round,
          file: `${file}.json`,
          heapUsedMiB: mib(report.memory.heapUsed),
          rssMiB: mib(report.memory.rss),
        });
        progress(
          `round ${round}: heap snapshot ${file}.heapsnapshot, heapUsed ${
            mib(report.memory.heapUsed).toFixed(1)
          } MiB`,
        );
      }
      await sleep(Math.max(0, (deadline - elapsed()) * 1000));
      if (round === 0 && !Number.isNaN(done)) result.rest.full = await atRest();
      if (elapsed() >= flags.seconds) break;
      round++;
      await admin.request("PATCH", `${path}/${DEPLOYMENT}`, {
        contentType: "application/merge-patch+json",
        body: {
          spec: { template: { metadata: { annotations: { "vksoak/round": String(round) } } } },
        },
      });
    }
    stopSampling.abort();
    await sampling;
    result.peakMiB = memoryMiB(kubelet.pid).peak;
    result.exitCode = kubelet.exitCode;
  } finally {
    stopSampling.abort();
    result.load[1] = machine().load;
    if (flags.cluster) {
      await cp.kubectl(["delete", "namespace", NAMESPACE, "--wait=true", "--timeout=180s"]).catch(
        (err) => progress(`cleaning up namespace ${NAMESPACE} failed: ${err}`),
      );
    }
    await kubelet?.stop();
    if (flags.cluster) {
      await cp.kubectl(["delete", "node", SOAK_NODE, "--ignore-not-found"]).catch(() => {});
    }
    admin.close();
    // A cluster the soak started is its own to stop; an attached one is left as it was.
    if (!flags.cluster) await stopControlPlane();
  }
  return result;
}

async function waitReady(admin: Kube, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const node = await admin.request<
        { status?: { conditions?: { type: string; status: string }[] } }
      >(
        "GET",
        `/api/v1/nodes/${SOAK_NODE}`,
      );
      if (node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return;
    } catch {
      // Not registered yet.
    }
    await sleep(500);
  }
  throw new Error(`node ${SOAK_NODE} was not Ready within 120 s; see the soak log`);
}

async function sample(
  kubelet: RunningSubject,
  metricsPort: number,
  flags: SoakFlags,
  round: () => number,
  elapsed: () => number,
  result: SoakResult,
  signal: AbortSignal,
): Promise<void> {
  let lastCpu = cpuSeconds(kubelet.pid);
  let lastT = elapsed();
  while (!signal.aborted && kubelet.exitCode === undefined) {
    const t = elapsed();
    const cpu = cpuSeconds(kubelet.pid);
    result.samples.push({
      t,
      round: round(),
      rssMiB: memoryMiB(kubelet.pid).rss,
      heapUsedMiB: await heapUsedMiB(metricsPort),
      brkMiB: brkHeapMiB(kubelet.pid),
      cpuPercent: t > lastT ? (100 * (cpu - lastCpu)) / (t - lastT) : 0,
    });
    lastCpu = cpu;
    lastT = t;
    await new Promise((r) => {
      const timer = setTimeout(r, flags.sampleSeconds * 1000);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        r(undefined);
      }, { once: true });
    });
  }
}
