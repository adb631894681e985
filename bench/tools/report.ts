/**
 * Writes bench/reports/RESULTS.md from the saved results of every subject and size: per size, a table of
 * vkubelet, the peer and the floor side by side with the ratios vkubelet/peer and vkubelet/floor, the machine and the
 * versions, and the issue's goals marked met or not.
 * @module
 */
import { etcdVersion, kubernetesVersion } from "../../tools/cluster/build.ts";
import { VERSION } from "../../app/config/config.ts";
import { PEER_VERSION } from "./peer.ts";
import { machine } from "./proc.ts";
import { type Phase, phaseTimeoutMs, type RunResult } from "../scenarios/scenarios.ts";
import {
  SETTLE_IDLE_REQUESTS,
  SETTLE_SAMPLE_MS,
  SETTLE_WINDOW_SAMPLES,
} from "../scenarios/settle.ts";
import { CAPACITY, type SubjectName } from "./subjects.ts";

const decoder = new TextDecoder();

async function goVersion(): Promise<string> {
  try {
    const out = await new Deno.Command("go", { args: ["env", "GOVERSION"], stdout: "piped" })
      .output();
    return decoder.decode(out.stdout).trim();
  } catch {
    return "unknown";
  }
}

function fmt(value: number, digits = 1): string {
  if (!Number.isFinite(value)) return "–";
  if (Math.abs(value) >= 100) return value.toFixed(0);
  return value.toFixed(digits);
}

/**
 * A phase's time; one that timed out shows how long the bench waited (`waited`, at least) and
 * how many pods made it, not when the last one did.
 */
function phaseCell(p: Phase, n: number, waited: number): string {
  if (!Number.isFinite(p.seconds)) return "–";
  if (p.timedOut) return `> ${fmt(Math.max(p.seconds, waited))} (${p.done}/${n})`;
  return p.done < n ? `> ${fmt(p.seconds)} (${p.done}/${n})` : fmt(p.seconds);
}

function settleCell(r: RunResult): string {
  if (!r.settle) return "–";
  return r.settle.settled ? fmt(r.settle.seconds) : `> ${fmt(r.settle.seconds)} (not settled)`;
}

/**
 * `a / b` as `1.23×`, or `–` when either is unknown or `b` is shown as zero (`shownB`, the cell
 * the reader sees: a ratio against "0.00" says nothing but how small the rounding was).
 */
export function ratio(a: number, b: number, shownB = fmt(b, 2)): string {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return "–";
  const shown = Number(shownB);
  if (Number.isFinite(shown) && shown === 0) return "–";
  return `${(a / b).toFixed(2)}×`;
}

interface Row {
  label: string;
  cell: (r: RunResult) => string;
  value: (r: RunResult) => number;
}

const ROWS: Row[] = [
  {
    label: "1. create → all Running (s)",
    // The wait for Running starts once the driver has sent every create.
    cell: (r) => phaseCell(r.create, r.n, r.create.createSeconds + phaseTimeoutMs(r.n) / 1000),
    value: (r) => r.create.done < r.n ? NaN : r.create.seconds,
  },
  {
    label: "1. per-pod create→Running p50 (s)",
    cell: (r) => fmt(r.create.p50, 2),
    value: (r) => r.create.p50,
  },
  {
    label: "1. per-pod create→Running p99 (s)",
    cell: (r) => fmt(r.create.p99, 2),
    value: (r) => r.create.p99,
  },
  {
    label: "1. driver's creates sent in (s)",
    cell: (r) => fmt(r.create.createSeconds),
    value: (r) => r.create.createSeconds,
  },
  {
    label: "1. kubelet CPU while creating (CPU s)",
    cell: (r) => fmt(r.create.cpuSeconds ?? NaN, 2),
    value: (r) => r.create.cpuSeconds ?? NaN,
  },
  {
    label: "2. settling after all Running (s)",
    cell: settleCell,
    value: (r) => r.settle?.settled ? r.settle.seconds : NaN,
  },
  {
    label: "2. CPU spent settling (CPU s)",
    cell: (r) => fmt(r.settle?.cpuSeconds ?? NaN, 2),
    value: (r) => r.settle?.cpuSeconds ?? NaN,
  },
  {
    label: "3. steady CPU after settling (CPU s / min)",
    cell: (r) => fmt(r.steady.cpuPerMinute, 2),
    value: (r) => r.steady.cpuPerMinute,
  },
  {
    label: "3. steady RSS (MiB)",
    cell: (r) => fmt(r.steady.rssMiB, 0),
    value: (r) => r.steady.rssMiB,
  },
  {
    label: "3. peak RSS over the run (MiB)",
    cell: (r) => fmt(r.steady.peakMiB, 0),
    value: (r) => r.steady.peakMiB,
  },
  {
    label: "4. restart → all reconciled (s)",
    cell: (r) => phaseCell(r.restart, r.n, phaseTimeoutMs(r.n) / 1000),
    value: (r) => r.restart.done < r.n ? NaN : r.restart.seconds,
  },
  {
    label: "4. kubelet CPU from start to reconciled (CPU s)",
    cell: (r) => fmt(r.restart.cpuSeconds ?? NaN, 2),
    value: (r) => r.restart.cpuSeconds ?? NaN,
  },
  {
    label: "4. status regressions",
    cell: (r) => String(r.restart.regressions),
    value: (r) => r.restart.regressions,
  },
  {
    label: "4. pods whose status was rewritten",
    cell: (r) => String(r.restart.statusWrites),
    value: (r) => r.restart.statusWrites,
  },
  {
    label: "5. delete all → all gone (s)",
    cell: (r) => phaseCell(r.remove, r.n, phaseTimeoutMs(r.n) / 1000),
    value: (r) => r.remove.done < r.n ? NaN : r.remove.seconds,
  },
  {
    label: "5. kubelet CPU while deleting (CPU s)",
    cell: (r) => fmt(r.remove.cpuSeconds ?? NaN, 2),
    value: (r) => r.remove.cpuSeconds ?? NaN,
  },

  {
    label: "API requests / pod, scenario 1",
    cell: (r) => fmt(r.create.requests / r.n, 2),
    value: (r) => r.create.requests / r.n,
  },
  {
    label: "API requests / pod, scenario 2 (settling)",
    cell: (r) => fmt((r.settle?.requests ?? NaN) / r.n, 2),
    value: (r) => (r.settle?.requests ?? NaN) / r.n,
  },
  {
    label: "API requests / pod, scenario 4",
    cell: (r) => fmt(r.restart.requests / r.n, 2),
    value: (r) => r.restart.requests / r.n,
  },
  {
    label: "API requests / pod, scenario 5",
    cell: (r) => fmt(r.remove.requests / r.n, 2),
    value: (r) => r.remove.requests / r.n,
  },

  {
    label: "API requests / min, steady after settling",
    cell: (r) => fmt(r.steady.requestsPerMinute),
    value: (r) => r.steady.requestsPerMinute,
  },
  {
    label: "start → node Ready (s)",
    cell: (r) => fmt(r.startupSeconds),
    value: (r) => r.startupSeconds,
  },
];

function find(results: RunResult[], subject: SubjectName, n: number): RunResult | undefined {
  return results.find((r) => r.subject === subject && r.n === n);
}

function table(results: RunResult[], n: number): string[] {
  const vk = find(results, "vkubelet", n);
  const peer = find(results, "peer", n);
  const floor = find(results, "floor", n);
  const lines = [
    `### N = ${n.toLocaleString("en")}`,
    "",
    "| | vkubelet | peer (virtual-kubelet) | floor | vkubelet / peer | vkubelet / floor |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const row of ROWS) {
    const cell = (r?: RunResult) => (r ? row.cell(r) : "not run");
    const v = (r?: RunResult) => (r ? row.value(r) : NaN);
    lines.push(
      `| ${row.label} | ${cell(vk)} | ${cell(peer)} | ${cell(floor)} | ${
        ratio(v(vk), v(peer), cell(peer))
      } | ${ratio(v(vk), v(floor), cell(floor))} |`,
    );
  }
  const loads = [vk, peer, floor].filter((r) => r?.loadAtCreate !== undefined)
    .map((r) => `${r!.subject} ${r!.loadAtCreate}`);
  if (loads.length) {
    lines.push("", `Load average (1 min) when scenario 1 started: ${loads.join(", ")}.`);
  }
  const unsettled = [vk, peer, floor].filter((r) => r && !r.settle).map((r) => r!.subject);
  if (unsettled.length) {
    lines.push(
      "",
      `${unsettled.join(", ")} at N=${n}: run before the settle step existed, so the steady` +
        " state began as soon as all pods were Running.",
    );
  }
  const errors = [vk, peer, floor].filter((r) => r?.error);
  for (const r of errors) lines.push("", `${r!.subject} at N=${n} failed: ${r!.error}`);
  for (const r of [vk, peer, floor]) {
    if (r?.crashes?.length) {
      lines.push(
        "",
        `${r.subject} at N=${n} crashed during ${
          r.crashes.join(", ")
        }; see bench/out/logs/${r.subject}-${n}.log` +
          " (restarted before scenario 5, as a supervisor would).",
      );
    }
  }
  return [...lines, ""];
}

/** "X s and Y CPU s" of a subject's settle step, for the goals section. */
function settleSummary(subject: SubjectName, r: RunResult | undefined): string {
  if (!r?.settle) return `${subject} –`;
  const time = r.settle.settled
    ? `${fmt(r.settle.seconds)} s`
    : `> ${fmt(r.settle.seconds)} s (not settled)`;
  return `${subject} ${time} and ${fmt(r.settle.cpuSeconds, 2)} CPU s`;
}

/** One goal's line: met, not met, or not measured. */
function goalLine(label: string, ok: boolean | undefined): string {
  return `- ${ok === undefined ? "not measured" : ok ? "met" : "**not met**"}: ${label}`;
}

/** The steady CPU goal at one size, with the settle step's time and CPU under it. */
function steadyCpuGoal(results: RunResult[], n: number): string[] {
  const vk = find(results, "vkubelet", n);
  const peer = find(results, "peer", n);
  // Results saved before the settle step measured the transient right after all Running.
  const measured = [vk, peer].every((r) => !r || r.settle)
    ? "measured after settling"
    : "measured as soon as all pods were Running, before the settle step existed";
  const lines = [goalLine(
    `steady CPU at N=${n}, ${measured}: vkubelet ≤ peer (${
      fmt(vk?.steady.cpuPerMinute ?? NaN, 2)
    } vs ${fmt(peer?.steady.cpuPerMinute ?? NaN, 2)} CPU s/min)`,
    vk && peer && Number.isFinite(vk.steady.cpuPerMinute)
      ? vk.steady.cpuPerMinute <= peer.steady.cpuPerMinute
      : undefined,
  )];
  if (vk?.settle || peer?.settle) {
    lines.push(
      `  - information, not a goal: settling after all Running took ${
        settleSummary("vkubelet", vk)
      }; ${settleSummary("peer", peer)}`,
    );
  }
  return lines;
}

function goals(results: RunResult[]): string[] {
  const out = ["## The issue's goals (reported, not asserted)", ""];
  const check = (label: string, ok: boolean | undefined) => out.push(goalLine(label, ok));
  for (const n of [1000, 10000]) {
    const vk = find(results, "vkubelet", n);
    const peer = find(results, "peer", n);
    const floor = find(results, "floor", n);
    const t = (r?: RunResult) => (r && r.create.done >= n ? r.create.seconds : NaN);
    const known = (a: number, b: number) => Number.isFinite(a) && Number.isFinite(b);
    const slowPeer = peer && peer.create.done < n; // timed out: vkubelet finishing is enough
    check(
      `scenario 1 at N=${n}: vkubelet ≤ 0.8 × peer (${fmt(t(vk))} s vs ${
        peer ? phaseCell(peer.create, n, peer.create.createSeconds + phaseTimeoutMs(n) / 1000) : "–"
      } s)`,
      slowPeer && Number.isFinite(t(vk))
        ? true
        : known(t(vk), t(peer))
        ? t(vk) <= 0.8 * t(peer)
        : undefined,
    );
    check(
      `scenario 1 at N=${n}: vkubelet ≤ 1.3 × floor (${fmt(t(vk))} s vs ${fmt(t(floor))} s)`,
      known(t(vk), t(floor)) ? t(vk) <= 1.3 * t(floor) : undefined,
    );
  }
  const vk10 = find(results, "vkubelet", 10000);
  const peer10 = find(results, "peer", 10000);
  check(
    `RSS at N=10,000: vkubelet ≤ peer (${fmt(vk10?.steady.rssMiB ?? NaN, 0)} vs ${
      fmt(peer10?.steady.rssMiB ?? NaN, 0)
    } MiB)`,
    vk10 && peer10 ? vk10.steady.rssMiB <= peer10.steady.rssMiB : undefined,
  );
  const sizes = [...new Set(results.map((r) => r.n))].sort((a, b) => a - b);
  for (const n of sizes) out.push(...steadyCpuGoal(results, n));
  return [...out, ""];
}

function verbs(results: RunResult[]): string[] {
  const out = [
    "## Where the requests went (largest size)",
    "",
    "All apiserver requests during a scenario by verb and resource (`apiserver_request_total`",
    "deltas, every client: the driver's N creates or deletes and its one watch are in them too;",
    "rows under N/20 left out). The per-pod figures above count only the kubelet's own user.",
    "",
  ];
  const n = Math.max(...results.map((r) => r.n));
  const list = (v: [string, number][] | undefined) =>
    v?.map(([k, c]) => `${k} ${c}`).join(", ") || "–";
  for (const r of results.filter((r) => r.n === n)) {
    out.push(`- ${r.subject}, scenario 1: ${list(r.create.verbs)}`);
    out.push(`- ${r.subject}, scenario 4: ${list(r.restart.verbs)}`);
    out.push(`- ${r.subject}, scenario 5: ${list(r.remove.verbs)}`);
  }
  const when = results.map((r) => `${r.subject} N=${r.n} ${r.finishedAt ?? "?"}`).join("; ");
  return [...out, "", `Finished: ${when}.`, ""];
}

/** The hand-written analysis in bench/reports/why.md (profile findings, changes), if there is one. */
async function why(): Promise<string[]> {
  try {
    const text = await Deno.readTextFile(new URL("../reports/why.md", import.meta.url));
    return [text.trim(), ""];
  } catch {
    return [];
  }
}

/** The run's settings the report states (bench/run.ts's flags). */
export interface ReportFlags {
  /** undefined: each kubelet's shipped client-side limit. */
  qps?: number;
  steadySeconds: number;
  concurrency: number;
}

/** Writes the report. */
export async function writeReport(
  path: string,
  results: RunResult[],
  flags: ReportFlags,
  startedAt?: string,
): Promise<void> {
  const m = machine();
  const sizes = [...new Set(results.map((r) => r.n))].sort((a, b) => a - b);
  const oneRun = startedAt !== undefined &&
    results.every((r) => r.finishedAt !== undefined && r.finishedAt >= startedAt);
  const lines = [
    "# vkubelet benchmark results",
    "",
    oneRun
      ? `Written by \`deno task bench\` (bench/run.ts) from one run of every subject and size below, started ${startedAt}, as is the chart \`scenario1.png\`.`
      : "Written by `deno task bench` (bench/run.ts) from the saved result of each subject and size (not all from one run: when each finished is listed below), as is the chart `scenario1.png`.",
    "Do not edit by hand: run the bench again; the analysis at the end is bench/reports/why.md.",
    "",
    `- machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB; load average when the`,
    `  report was written: ${m.load} (other work on the machine shares the cores)`,
    `- vkubelet ${VERSION} (Deno ${Deno.version.deno}, mock provider)`,
    `- peer: virtual-kubelet ${PEER_VERSION} \`cmd/virtual-kubelet\` with its mock provider (${await goVersion()})`,
    `- control plane: Kubernetes ${kubernetesVersion()}, etcd ${etcdVersion()}, built from Go modules`,
    `  (tools/cluster), a fresh copy (empty etcd) for every subject and size`,
    `- node capacity for all: ${
      JSON.stringify(CAPACITY)
    }; client-side request limit of both kubelets:`,
    `  ${
      flags.qps === undefined
        ? "each one's shipped default (vkubelet 50/s burst 100; virtual-kubelet client-go's 5/s burst 10)"
        : `${flags.qps}/s, burst ${flags.qps * 2}`
    }`,
    `- settle step: after all pods are Running, until the kubelet makes at most ${SETTLE_IDLE_REQUESTS}`,
    `  requests in ${SETTLE_WINDOW_SAMPLES * SETTLE_SAMPLE_MS / 1000} s (sampled every ${
      SETTLE_SAMPLE_MS / 1000
    } s), at most 60 s + 50 ms × N; then the steady state: ${flags.steadySeconds} s`,
    "- a phase that timed out shows how long the bench waited and how many pods made it",
    `- the driver creates and deletes with ${flags.concurrency} requests in flight`,
    "",
    "## Results",
    "",
    ...sizes.flatMap((n) => table(results, n)),
    ...goals(results),
    ...verbs(results),
    ...await why(),
    "## How it is measured",
    "",
    "See bench/README.md.",
    "",
  ];
  await Deno.writeTextFile(path, lines.join("\n"));
}
