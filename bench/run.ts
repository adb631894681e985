/**
 * `deno task bench`: vkubelet (mock provider) against virtual-kubelet's own CLI with its mock
 * provider (the peer) and against the floor, one after the other, each on a fresh copy of the
 * same local control plane; writes bench/reports/RESULTS.md and bench/reports/scenario1.png from that run.
 *
 *   deno task bench [--max-n N] [--sizes 100,1000,10000] [--subjects vkubelet,peer,floor]
 *                   [--steady-seconds 120] [--qps 500|shipped] [--concurrency 32]
 *                   [--report-only] [--merge results.json]
 *   deno task bench --soak 60m [--pods 300] [--roll-seconds 60] [--sample-seconds 30]
 *                   [--cluster NAME] [--heap-at 3,12] [--report-only]     (see soak.ts)
 *   deno task bench --nodes 1000 --pods 10000   (many nodes in one process: bench/scenarios/multinode.ts)
 *   deno task bench --streaming [--mb 100]      (exec, port-forward, logs: bench/scenarios/streaming.ts)
 *
 * Raw results go to bench/out/results.json (git-ignored), one entry per subject and size, so a
 * long run that is stopped can still be reported with `--report-only`.
 * @module
 */
import { ensurePeer } from "./tools/peer.ts";
import { writeChart } from "./tools/chart.ts";
import { writeReport } from "./tools/report.ts";
import {
  phaseTimeoutMs,
  type RunResult,
  runSubject,
  settleTimeoutMs,
} from "./scenarios/scenarios.ts";
import { type SubjectName, SUBJECTS } from "./tools/subjects.ts";
import { parseSoakFlags } from "./tools/soak_flags.ts";
import { runSoak, type SoakResult } from "./scenarios/soak.ts";
import { writeSoakReport } from "./tools/soak_report.ts";

const benchDir = new URL(".", import.meta.url).pathname;
// VKBENCH_OUT keeps a side run's results, report and chart apart from bench/out and from the
// committed bench/reports/RESULTS.md and bench/reports/scenario1.png.
const sideDir = Deno.env.get("VKBENCH_OUT");
const outDir = sideDir ?? `${benchDir}out`;
const reportDir = sideDir ? `${sideDir}/` : `${benchDir}reports/`;
const resultsFile = `${outDir}/results.json`;

/** The bench's command-line options. */
export interface BenchFlags {
  sizes: number[];
  subjects: SubjectName[];
  steadySeconds: number;
  /** undefined: each kubelet's shipped client-side limit. */
  qps?: number;
  concurrency: number;
  reportOnly: boolean;
  /** results.json files of other runs (e.g. VKBENCH_OUT side runs) merged in before reporting. */
  merge: string[];
}

const USAGE = `usage: deno task bench [options]
  --max-n N             largest size to run (default 10000; 1000 skips the 10,000-pod runs)
  --sizes A,B,...       sizes to run (default 100,1000,10000, cut at --max-n)
  --subjects a,b        any of vkubelet,peer,floor (default all three)
  --steady-seconds S    length of the steady-state scenario (default 120)
  --qps N|shipped       client-side request limit of both kubelets (default 500, burst 2N);
                        "shipped" keeps each one's default (vkubelet 50/100, peer 5/10)
  --concurrency N       creates/deletes in flight from the driver (default 32)
  --report-only         rewrite RESULTS.md and the chart from bench/out/results.json
  --merge FILE          first merge another run's results.json into bench/out/results.json
                        (its subjects and sizes replace the same ones); may be repeated`;

/** Parses the flags; throws a RangeError naming the bad one. */
export function parseFlags(args: string[]): BenchFlags {
  const flags: BenchFlags = {
    sizes: [100, 1000, 10000],
    subjects: [...SUBJECTS],
    steadySeconds: 120,
    qps: 500,
    concurrency: 32,
    reportOnly: false,
    merge: [],
  };
  let maxN = Infinity;
  for (let i = 0; i < args.length; i++) {
    const [name, inline] = args[i].split("=", 2);
    const value = () => inline ?? args[++i] ?? "";
    const int = (text: string) => {
      const n = Number(text);
      if (!Number.isInteger(n) || n <= 0) throw new RangeError(`${name} needs a positive integer`);
      return n;
    };
    switch (name) {
      case "--max-n":
        maxN = int(value());
        break;
      case "--sizes":
        flags.sizes = value().split(",").map(int);
        break;
      case "--subjects": {
        const list = value().split(",");
        const bad = list.find((s) => !SUBJECTS.includes(s as SubjectName));
        if (bad) throw new RangeError(`--subjects: unknown subject ${bad}`);
        flags.subjects = list as SubjectName[];
        break;
      }
      case "--steady-seconds":
        flags.steadySeconds = int(value());
        break;
      case "--qps": {
        const v = value();
        flags.qps = v === "shipped" ? undefined : int(v);
        break;
      }
      case "--concurrency":
        flags.concurrency = int(value());
        break;
      case "--report-only":
        flags.reportOnly = true;
        break;
      case "--merge":
        flags.merge.push(value());
        break;
      case "--help":
      case "-h":
        throw new RangeError(USAGE);
      default:
        throw new RangeError(`unknown option ${args[i]}\n${USAGE}`);
    }
  }
  flags.sizes = flags.sizes.filter((n) => n <= maxN);
  return flags;
}

const encoder = new TextEncoder();
const started = performance.now();
function progress(line: string): void {
  const t = ((performance.now() - started) / 1000).toFixed(0).padStart(5);
  Deno.stderr.writeSync(encoder.encode(`[bench ${t}s] ${line}\n`));
}

async function readResults(): Promise<RunResult[]> {
  try {
    return JSON.parse(await Deno.readTextFile(resultsFile));
  } catch {
    return [];
  }
}

/** Merges another run's results into results.json; its subject/size pairs replace ours. */
async function mergeResults(file: string): Promise<void> {
  const other: RunResult[] = JSON.parse(await Deno.readTextFile(file));
  const replaced = (r: RunResult) => other.some((o) => o.subject === r.subject && o.n === r.n);
  const merged = [...(await readResults()).filter((r) => !replaced(r)), ...other];
  merged.sort((a, b) => a.n - b.n || SUBJECTS.indexOf(a.subject) - SUBJECTS.indexOf(b.subject));
  await Deno.writeTextFile(resultsFile, JSON.stringify(merged, null, 2));
  progress(`merged ${other.map((r) => `${r.subject} N=${r.n}`).join(", ")} from ${file}`);
}

/** The soak mode: runs it (unless --report-only) and writes SOAK.md and soak.png. */
async function soakMain(args: string[]): Promise<number> {
  const reportOnly = args.includes("--report-only");
  let flags;
  try {
    flags = parseSoakFlags(args.filter((a) => a !== "--report-only"));
  } catch (err) {
    Deno.stderr.writeSync(encoder.encode(`${(err as Error).message}\n`));
    return 2;
  }
  await Deno.mkdir(outDir, { recursive: true });
  const file = `${outDir}/soak.json`;
  if (!reportOnly) {
    progress(`soak for ${flags.seconds} s at ${flags.pods} pods`);
    const result = await runSoak(flags, outDir, progress);
    await Deno.writeTextFile(file, JSON.stringify(result, null, 2));
  }
  const result: SoakResult = JSON.parse(await Deno.readTextFile(file));
  await writeSoakReport(reportDir, result);
  await new Deno.Command(Deno.execPath(), { args: ["fmt", "-q", `${reportDir}SOAK.md`] }).output();
  progress(`wrote ${reportDir}SOAK.md and ${reportDir}soak.png`);
  return 0;
}

async function main(args: string[]): Promise<number> {
  if (args.some((a) => a === "--soak" || a.startsWith("--soak="))) return await soakMain(args);
  // Many nodes in one process is a scenario of its own (bench/scenarios/multinode.ts).
  if (args.some((a) => a === "--nodes" || a.startsWith("--nodes="))) {
    return await (await import("./scenarios/multinode.ts")).main(args);
  }
  if (args.includes("--streaming")) {
    return await (await import("./scenarios/streaming.ts")).main(args);
  }
  let flags: BenchFlags;
  try {
    flags = parseFlags(args);
  } catch (err) {
    Deno.stderr.writeSync(encoder.encode(`${(err as Error).message}\n`));
    return 2;
  }
  await Deno.mkdir(outDir, { recursive: true });
  for (const file of flags.merge) await mergeResults(file);
  const meta = { flags, startedAt: new Date().toISOString() };
  if (!flags.reportOnly) {
    const peerBinary = flags.subjects.includes("peer") ? await ensurePeer({ progress }) : "";
    // Results of other sizes or subjects from an earlier run are kept; each row says when.
    const results = (await readResults()).filter((r) =>
      !(flags.sizes.includes(r.n) && flags.subjects.includes(r.subject))
    );
    await Deno.writeTextFile(`${outDir}/meta.json`, JSON.stringify(meta, null, 2));
    const budget = flags.sizes.reduce(
      (sum, n) =>
        sum +
        flags.subjects.length *
          (flags.steadySeconds + (3 * phaseTimeoutMs(n) + settleTimeoutMs(n)) / 1000),
      0,
    );
    progress(
      `sizes ${flags.sizes.join(", ")}; subjects ${flags.subjects.join(", ")}; client limit ${
        flags.qps ?? "as shipped"
      }; worst case ${(budget / 60).toFixed(0)} min`,
    );
    for (const n of flags.sizes) {
      for (const subject of flags.subjects) {
        const result = await runSubject(subject, n, {
          steadySeconds: flags.steadySeconds,
          createConcurrency: flags.concurrency,
          qps: flags.qps,
          peerBinary,
          outDir,
          progress,
        });
        results.push(result);
        results.sort((a, b) =>
          a.n - b.n || SUBJECTS.indexOf(a.subject) - SUBJECTS.indexOf(b.subject)
        );
        await Deno.writeTextFile(resultsFile, JSON.stringify(results, null, 2));
      }
    }
  }
  const results = await readResults();
  const savedMeta = JSON.parse(await Deno.readTextFile(`${outDir}/meta.json`).catch(() => "{}"));
  await writeChart(`${reportDir}scenario1.png`, results);
  await writeReport(
    `${reportDir}RESULTS.md`,
    results,
    savedMeta.flags ?? flags,
    savedMeta.startedAt,
  );
  // Keep `deno fmt --check` clean for the generated file.
  await new Deno.Command(Deno.execPath(), { args: ["fmt", "-q", `${reportDir}RESULTS.md`] })
    .output();
  progress(`wrote ${reportDir}RESULTS.md and ${reportDir}scenario1.png`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
