/**
 * Where a Deno process allocates: V8's sampling heap profiler over the DevTools protocol for a
 * while, counting every sampled allocation, also those the garbage collector has already freed
 * (`includeObjectsCollectedByMajorGC`/`MinorGC`), summed per allocating function (self) and per
 * function with its callees (total). A peak of RSS is garbage made faster than it is collected:
 * this names who makes it.
 *
 *   deno run -A bench/tools/alloc_profile.ts --port 9329 --seconds 30 [--out x.heapprofile]
 * @module
 */
import { Cdp, connectInspector } from "./inspector.ts";
import { cliOption, frameLabel } from "./profile.ts";

interface SamplingNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

/** `HeapProfiler.stopSampling`'s answer. */
export interface SamplingProfile {
  head: SamplingNode;
  samples: { size: number; nodeId: number }[];
}

/** MiB allocated per function, self and with callees, largest first. */
export function summarizeAllocations(profile: SamplingProfile, top = 30): string[] {
  const bySize = new Map<number, number>();
  for (const s of profile.samples) bySize.set(s.nodeId, (bySize.get(s.nodeId) ?? 0) + s.size);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const walk = (node: SamplingNode, onStack: Set<string>): number => {
    const name = frameLabel(node.callFrame);
    const own = bySize.get(node.id) ?? 0;
    self.set(name, (self.get(name) ?? 0) + own);
    const nested = onStack.has(name);
    onStack.add(name);
    let sum = own;
    for (const child of node.children) sum += walk(child, onStack);
    if (!nested) {
      onStack.delete(name);
      total.set(name, (total.get(name) ?? 0) + sum);
    }
    return sum;
  };
  const all = walk(profile.head, new Set());
  const rows = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) =>
      `${(v / 2 ** 20).toFixed(1).padStart(8)} MiB ${(100 * v / all).toFixed(1).padStart(5)}%  ${k}`
    );
  return [
    `sampled ${(all / 2 ** 20).toFixed(1)} MiB`,
    "self:",
    ...rows(self),
    "total:",
    ...rows(total),
  ];
}

async function main(args: string[]): Promise<void> {
  const opt = (name: string, fallback: string) => cliOption(args, name, fallback);
  const port = Number(opt("--port", "9329"));
  const seconds = Number(opt("--seconds", "20"));
  const cdp = new Cdp(await connectInspector(port, Number(opt("--wait-seconds", "120")) * 1000));
  await cdp.send("HeapProfiler.enable");
  await cdp.send("HeapProfiler.startSampling", {
    samplingInterval: 16_384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  console.error(`sampling allocations of 127.0.0.1:${port} for ${seconds} s`);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const { profile } = await cdp.send<{ profile: SamplingProfile }>("HeapProfiler.stopSampling");
  await cdp.close();
  const out = args.includes("--out") ? opt("--out", "") : undefined;
  if (out) await Deno.writeTextFile(out, JSON.stringify(profile));
  console.log(summarizeAllocations(profile).join("\n"));
}

if (import.meta.main) await main(Deno.args);
