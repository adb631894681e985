/**
 * Heap snapshots of a Deno process started with `--inspect=127.0.0.1:PORT`, through the
 * inspector (`HeapProfiler.takeHeapSnapshot`), summarized per constructor (`heap_summary.ts`), and
 * a comparison of two summaries — to tell memory retained per deleted pod from V8 growing its heap.
 *
 *   deno run -A bench/tools/heap.ts --port 9329 --out bench/out/round3      # writes .heapsnapshot + .json
 *   deno run -A bench/tools/heap.ts --compare bench/out/round3.json bench/out/round12.json
 *   deno run -A bench/tools/heap.ts --summarize bench/out/round3.heapsnapshot   # rewrites round3.json
 *   deno run -A bench/tools/heap.ts --fields bench/out/round3.heapsnapshot      # which fields hold it
 *
 * The bench's soak mode takes them itself at the rounds given by `--heap-at`.
 * @module
 */
import { Cdp, connectInspector } from "./inspector.ts";
import {
  compareHeaps,
  type HeapGroup,
  type HeapSnapshot,
  summarizeFields,
  summarizeHeap,
} from "./heap_summary.ts";

/** What one snapshot gives: the process's own memory figures and the per-group table. */
export interface HeapReport {
  takenAt: string;
  /** `Deno.memoryUsage()` inside the process, after the snapshot's full GC. */
  memory: { rss: number; heapTotal: number; heapUsed: number; external: number };
  groups: HeapGroup[];
}

/** Takes a snapshot of the process at `127.0.0.1:port`, writes `out.heapsnapshot` and `out.json`. */
export async function takeHeapSnapshot(port: number, out: string): Promise<HeapReport> {
  const cdp = new Cdp(await connectInspector(port, 10_000));
  try {
    const file = await Deno.open(`${out}.heapsnapshot`, {
      create: true,
      write: true,
      truncate: true,
    });
    const encoder = new TextEncoder();
    const chunks: string[] = [];
    cdp.on("HeapProfiler.addHeapSnapshotChunk", (p) => chunks.push(p.chunk as string));
    await cdp.send("HeapProfiler.enable");
    await cdp.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
    const text = chunks.join("");
    await file.write(encoder.encode(text));
    file.close();
    const { result } = await cdp.send<{ result: { value: string } }>("Runtime.evaluate", {
      expression: "JSON.stringify(Deno.memoryUsage())",
      returnByValue: true,
    });
    await cdp.send("HeapProfiler.disable");
    const report: HeapReport = {
      takenAt: new Date().toISOString(),
      memory: JSON.parse(result.value),
      groups: summarizeHeap(JSON.parse(text) as HeapSnapshot),
    };
    await Deno.writeTextFile(`${out}.json`, JSON.stringify(report));
    return report;
  } finally {
    await cdp.close();
  }
}

const mib = (b: number) => (b / 1048576).toFixed(2);

/** A text table of the groups that changed most between two reports. */
export function formatComparison(before: HeapReport, after: HeapReport, top = 25): string[] {
  const mem = (r: HeapReport) =>
    `rss ${mib(r.memory.rss)} MiB, heapTotal ${mib(r.memory.heapTotal)} MiB, heapUsed ${
      mib(r.memory.heapUsed)
    } MiB, external ${mib(r.memory.external)} MiB`;
  const lines = [
    `before (${before.takenAt}): ${mem(before)}`,
    `after  (${after.takenAt}): ${mem(after)}`,
    "",
    "| group | count before | count after | retained before (KiB) | retained after (KiB) |",
    "| --- | ---: | ---: | ---: | ---: |",
  ];
  for (const d of compareHeaps(before.groups, after.groups, top)) {
    const kib = (b: number) => (b / 1024).toFixed(1);
    lines.push(
      `| ${d.name.replaceAll("|", "\\|").slice(0, 60)} | ${d.count[0]} | ${d.count[1]} | ${
        kib(d.retainedSize[0])
      } | ${kib(d.retainedSize[1])} |`,
    );
  }
  return lines;
}

async function main(args: string[]): Promise<void> {
  const opt = (name: string, fallback: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
  };
  const compare = args.indexOf("--compare");
  if (compare >= 0) {
    const read = async (f: string) => JSON.parse(await Deno.readTextFile(f)) as HeapReport;
    const [a, b] = await Promise.all([read(args[compare + 1]), read(args[compare + 2])]);
    console.log(formatComparison(a, b, Number(opt("--top", "25"))).join("\n"));
    return;
  }
  const fields = args.indexOf("--fields");
  if (fields >= 0) {
    const snap = JSON.parse(await Deno.readTextFile(args[fields + 1])) as HeapSnapshot;
    for (const f of summarizeFields(snap, Number(opt("--top", "40")))) {
      console.log(
        `${(f.retainedSize / 1024).toFixed(0).padStart(9)} KiB ${
          String(f.count).padStart(8)
        }  ${f.name}`,
      );
    }
    return;
  }
  const summarize = args.indexOf("--summarize");
  if (summarize >= 0) {
    const file = args[summarize + 1];
    const out = file.replace(/\.heapsnapshot$/, ".json");
    const old = JSON.parse(await Deno.readTextFile(out).catch(() => "{}"));
    const groups = summarizeHeap(JSON.parse(await Deno.readTextFile(file)) as HeapSnapshot);
    await Deno.writeTextFile(out, JSON.stringify({ ...old, groups }));
    console.error(`wrote ${out}`);
    return;
  }
  const report = await takeHeapSnapshot(
    Number(opt("--port", "9329")),
    opt("--out", "bench/out/vkubelet"),
  );
  for (const g of report.groups.slice(0, 30)) {
    console.log(
      `${(g.retainedSize / 1024).toFixed(0).padStart(9)} KiB ${
        String(g.count).padStart(8)
      }  ${g.name}`,
    );
  }
}

if (import.meta.main) await main(Deno.args);
