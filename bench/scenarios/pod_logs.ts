/**
 * `deno run -A bench/scenarios/pod_logs.ts [--pods=8] [--rate=50] [--lines=1500] [--pad=200]
 * [--providers=process,slurm]`: pods' logs on their way to a node log agent (issue 65 item 4).
 * `--pods` pods each write `--lines` lines of about `--pad` bytes at `--rate` lines/s, each line
 * carrying its write time. For each provider (the process provider, and slurm on a real SLURM from
 * tools/harness/slurm.ts), two runs on the local control plane:
 *
 * - **pod log dir**: vkubelet with `--pod-log-dir` and the OpenTelemetry Collector of
 *   tools/otelcol on docs/logging.md's config tailing it; the lag is the collector's read time of
 *   a line (`observedTimeUnixNano`) minus its write time.
 * - **floor**: vkubelet with `--pod-log-dir=none`, and the backend's own log read directly (the
 *   process provider's own CRI files, the SLURM jobs' output files) by a tailer polling every
 *   200 ms, as the collector's filelog receiver does; the lag is its read time minus the write
 *   time.
 *
 * vkubelet's CPU (user + system, /proc/<pid>/stat) from before the pods are made until every line
 * has arrived, per MB of lines written; the difference between the two runs is what mirroring or
 * copying the logs costs. Bounded: each run gives up after `--lines / --rate` + 120 s. Prints a
 * table and writes bench/reports/POD_LOGS.md with the load average. Needs root (slurm).
 * @module
 */
import { parseArgs } from "node:util";
import { type TestCluster, useCluster } from "../../tools/cluster/harness.ts";
import { type RunningVkubelet, startVkubelet } from "../../tools/cluster/vkubelet.ts";
import { NOBODY, type Slurm, startSlurm } from "../../tools/harness/slurm.ts";
import { type RunningCollector, startCollector } from "../../tools/otelcol/collector.ts";

const say = (line: string) => Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
const loadavg = async () =>
  (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");

/** The pods' program: `LINES` lines at `RATE`/s, `<write time ns> <i> <pad>`, then it sleeps. */
const WRITER = [
  "import os, sys, time",
  'rate = float(os.environ["RATE"]); n = int(os.environ["LINES"]); pad = "z" * int(os.environ["PAD"])',
  "t0 = time.time()",
  "for i in range(1, n + 1):",
  "    d = t0 + i / rate - time.time()",
  "    if d > 0: time.sleep(d)",
  '    sys.stdout.write(f"{time.time_ns()} {i} {pad}\\n"); sys.stdout.flush()',
  "time.sleep(3600)",
].join("\n");

interface Settings {
  pods: number;
  rate: number;
  lines: number;
  pad: number;
}

interface RunResult {
  provider: string;
  mode: "pod log dir" | "floor";
  lines: number;
  duplicates: number;
  megabytes: number;
  cpuSeconds: number;
  lagMs: number[];
}

/** user + system CPU seconds of a process. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Parses a pod's line: its write time (ns) and number, or undefined. */
function written(text: string): { ns: bigint; i: number } | undefined {
  const m = text.match(/(\d{19}) (\d+) z/);
  return m ? { ns: BigInt(m[1]), i: Number(m[2]) } : undefined;
}

/** Lines seen, by pod: each line's lag, duplicates counted. */
class Tally {
  readonly seen = new Map<string, Set<number>>();
  readonly lagMs: number[] = [];
  duplicates = 0;
  bytes = 0;
  add(pod: string, text: string, readNs: bigint): void {
    const w = written(text);
    if (!w) return;
    const set = this.seen.get(pod) ?? new Set();
    this.seen.set(pod, set);
    if (set.has(w.i)) {
      this.duplicates++;
      return;
    }
    set.add(w.i);
    // The line as the pod wrote it, without a CRI prefix the floor's files have.
    this.bytes += text.length - text.search(/\d{19} \d+ z/) + 1;
    this.lagMs.push(Number(readNs - w.ns) / 1e6);
  }
  get count(): number {
    return [...this.seen.values()].reduce((n, s) => n + s.size, 0);
  }
}

/** The floor's reader: every file under `root` named like `pattern`, tailed every 200 ms. */
function tailFiles(root: string, pattern: RegExp, tally: Tally, signal: AbortSignal) {
  const offsets = new Map<string, number>();
  const rests = new Map<string, string>();
  const walk = async (dir: string, out: string[]) => {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path, out).catch(() => {});
      else if (e.isFile && pattern.test(path)) out.push(path);
    }
  };
  return (async () => {
    while (!signal.aborted) {
      const files: string[] = [];
      await walk(root, files).catch(() => {});
      for (const path of files) {
        const file = await Deno.open(path).catch(() => undefined);
        if (!file) continue;
        try {
          await file.seek(offsets.get(path) ?? 0, Deno.SeekMode.Start);
          const chunk = new Uint8Array(1 << 20);
          let text = rests.get(path) ?? "";
          let n: number | null;
          while ((n = await file.read(chunk)) !== null) {
            offsets.set(path, (offsets.get(path) ?? 0) + n);
            text += new TextDecoder().decode(chunk.subarray(0, n));
          }
          const now = BigInt(Date.now()) * 1_000_000n;
          const lines = text.split("\n");
          rests.set(path, lines.pop()!);
          for (const line of lines) tally.add(path, line, now);
        } finally {
          file.close();
        }
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function oneRun(
  cluster: TestCluster,
  provider: "process" | "slurm",
  mode: RunResult["mode"],
  s: Settings,
  slurm?: Slurm,
): Promise<RunResult> {
  const root = await Deno.makeTempDir({ prefix: `vk-bench-podlogs-${provider}-` });
  const nodeName = `vk-bench-logs-${crypto.randomUUID().slice(0, 6)}`;
  const ns = await cluster.newNamespace("bench-logs");
  const kubectl = cluster.kubectlIn(ns);
  const providerConfig = provider === "process" ? { stateDir: `${root}/state`, cgroups: "off" } : {
    rest: { socket: slurm!.socket },
    cli: {},
    sharedDir: slurm!.sharedDir,
    stateDir: `${slurm!.dir}/vk-state-${nodeName}`,
    fileOwner: NOBODY,
    statusInterval: "1s",
  };
  const podLogDir = mode === "floor" ? "none" : `${root}/pods`;
  if (podLogDir !== "none") await Deno.mkdir(podLogDir);
  let vk: RunningVkubelet | undefined;
  let collector: RunningCollector | undefined;
  const stopFloor = new AbortController();
  const tally = new Tally();
  let floorReading: Promise<void> | undefined;
  try {
    vk = await startVkubelet(cluster, {
      nodeName,
      provider,
      providerConfig: JSON.stringify(providerConfig),
      env: slurm?.env,
      args: [`--pod-log-dir=${podLogDir}`],
    });
    if (mode === "pod log dir") {
      collector = await startCollector({ podLogDir, workDir: `${root}/otel` });
    } else {
      floorReading = provider === "process"
        ? tailFiles(`${root}/state`, /\/logs\/\d+\.log$/, tally, stopFloor.signal)
        : tailFiles(slurm!.sharedDir, /\/logs\/main\.\d+\.log$/, tally, stopFloor.signal);
    }
    const cpuBefore = await cpuSeconds(vk.pid);
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "writers" },
        spec: {
          replicas: s.pods,
          selector: { matchLabels: { app: "writers" } },
          template: {
            metadata: { labels: { app: "writers" } },
            spec: {
              nodeSelector: { "kubernetes.io/hostname": nodeName },
              tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists" }],
              terminationGracePeriodSeconds: 1,
              containers: [{
                name: "main",
                image: "python",
                command: ["python3", "-c", WRITER],
                env: [
                  { name: "RATE", value: String(s.rate) },
                  { name: "LINES", value: String(s.lines) },
                  { name: "PAD", value: String(s.pad) },
                ],
              }],
            },
          },
        },
      }),
    );
    const want = s.pods * s.lines;
    // The collector's whole output is counted afresh each time; the floor's tally grows.
    const measure = async () => {
      if (!collector) return tally;
      const fresh = new Tally();
      for (const r of await collector.records()) fresh.add(r.uid ?? "", r.body, r.observedUnixNano);
      return fresh;
    };
    const deadline = Date.now() + (s.lines / s.rate + 120) * 1000;
    while (Date.now() < deadline && (await measure()).count < want) {
      await new Promise((r) => setTimeout(r, 1000));
    }
    const cpuAfter = await cpuSeconds(vk.pid);
    const seen = await measure();
    await kubectl(["delete", "deployment", "writers", "--wait=true", "--timeout=120s"]);
    await kubectl(["delete", "pods", "--all", "--wait=true", "--timeout=120s"]).catch(() => "");
    return {
      provider,
      mode,
      lines: seen.count,
      duplicates: seen.duplicates,
      megabytes: seen.bytes / 1e6,
      cpuSeconds: cpuAfter - cpuBefore,
      lagMs: seen.lagMs,
    };
  } finally {
    stopFloor.abort();
    await floorReading;
    await collector?.stop();
    await cluster.kubectl(["delete", "namespace", ns, "--wait=false"]);
    await vk?.stop();
    await cluster.kubectl(["delete", "node", nodeName, "--wait=false"]);
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

function row(r: RunResult, s: Settings): string {
  const want = s.pods * s.lines;
  return `| ${r.provider} | ${r.mode} | ${r.lines}/${want} | ${r.duplicates} | ${
    r.megabytes.toFixed(2)
  } | ${r.cpuSeconds.toFixed(2)} | ${(r.cpuSeconds / r.megabytes).toFixed(2)} | ${
    percentile(r.lagMs, 50).toFixed(0)
  } | ${percentile(r.lagMs, 99).toFixed(0)} |`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      pods: { type: "string", default: "8" },
      rate: { type: "string", default: "50" },
      lines: { type: "string", default: "1500" },
      pad: { type: "string", default: "200" },
      providers: { type: "string", default: "process,slurm" },
      report: { type: "string", default: "bench/reports/POD_LOGS.md" },
    },
  });
  const s: Settings = {
    pods: Number(values.pods),
    rate: Number(values.rate),
    lines: Number(values.lines),
    pad: Number(values.pad),
  };
  const providers = values.providers!.split(",") as ("process" | "slurm")[];
  const cluster = await useCluster();
  const loadBefore = await loadavg();
  say(`pod_logs: ${JSON.stringify(s)}; load average before: ${loadBefore}`);
  const results: RunResult[] = [];
  const slurm = providers.includes("slurm")
    ? await startSlurm({ cpus: s.pods + 8, memoryMiB: (s.pods + 8) * 100 })
    : undefined;
  try {
    for (const provider of providers) {
      for (const mode of ["floor", "pod log dir"] as const) {
        const r = await oneRun(cluster, provider, mode, s, slurm);
        results.push(r);
        say(row(r, s));
      }
    }
  } finally {
    await slurm?.stop();
  }
  const loadAfter = await loadavg();
  const table = [
    "| provider | run | lines arrived | duplicates | MB | vkubelet CPU s | CPU s / MB | lag p50 ms | lag p99 ms |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...results.map((r) => row(r, s)),
  ].join("\n");
  say(table);
  say(`load average after: ${loadAfter}`);
  const date = new Date().toISOString().slice(0, 16).replace("T", " ");
  const report = await Deno.readTextFile(values.report!).catch(() => "");
  const marker = "<!-- figures -->";
  const figures =
    `${marker}\nLast run ${date} UTC: \`deno run -A bench/scenarios/pod_logs.ts --pods=${s.pods} --rate=${s.rate} --lines=${s.lines} --pad=${s.pad} --providers=${values.providers}\`; load average ${loadBefore} before, ${loadAfter} after (2 cores shared with other work: the figures are noisy).\n\n${table}\n${marker}`;
  const next = report.includes(marker)
    ? report.replace(new RegExp(`${marker}[\\s\\S]*${marker}`), figures)
    : `# Pods' logs to a node log agent\n\n${figures}\n`;
  await Deno.writeTextFile(values.report!, next);
}
