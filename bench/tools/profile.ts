/**
 * A small CPU profiler for a Deno process started with `--inspect=127.0.0.1:PORT` (the bench
 * starts vkubelet so when `VKBENCH_INSPECT=127.0.0.1:PORT` is set): it waits for the inspector,
 * records V8's sampling profiler over the Chrome DevTools Protocol for a while, writes the
 * `.cpuprofile` (open it in Chrome DevTools) and prints the functions with the most self and
 * total time.
 *
 *   deno run -A bench/tools/profile.ts --port 9329 --seconds 20 --out bench/out/create.cpuprofile
 *
 * Deno 2.9 has no `--cpu-prof`, and `--v8-flags=--prof` needs d8's tick processor; this needs
 * neither.
 * @module
 */
import { Cdp, connectInspector } from "./inspector.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
  hitCount?: number;
}

/** A V8 CPU profile (`Profiler.stop`'s answer). */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** `function file:line` of a profile's call frame, with the repository's and npm's paths cut. */
export function frameLabel(frame: ProfileNode["callFrame"]): string {
  const url = frame.url
    .replace(/^file:\/\/.*?\/(app|base|core|k8s|spdy|provider|providers|bench)\//, "$1/")
    .replace(/^https?:\/\/[^/]+\//, "").replace(/^.*node_modules\//, "npm:")
    // Deno's npm cache: …/npm/<registry>/<package>/<version>/…
    .replace(/^file:\/\/.*\/npm\/[^/]+\//, "npm:");
  return `${frame.functionName || "(anonymous)"} ${url}:${frame.lineNumber + 1}`;
}

/** Self and total milliseconds per function (`name url:line`), largest first. */
export function summarize(profile: CpuProfile, top = 30): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const deltas = profile.timeDeltas ?? [];
  const selfMs = new Map<number, number>();
  (profile.samples ?? []).forEach((id, i) => {
    selfMs.set(id, (selfMs.get(id) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0) / 1000);
  });
  const label = (n: ProfileNode) => frameLabel(n.callFrame);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const walk = (id: number, onStack: Set<string>): number => {
    const node = byId.get(id)!;
    let sum = selfMs.get(id) ?? 0;
    const name = label(node);
    self.set(name, (self.get(name) ?? 0) + (selfMs.get(id) ?? 0));
    const nested = onStack.has(name);
    onStack.add(name);
    for (const child of node.children ?? []) sum += walk(child, onStack);
    if (!nested) {
      onStack.delete(name);
      total.set(name, (total.get(name) ?? 0) + sum);
    }
    return sum;
  };
  walk(profile.nodes[0].id, new Set());
  const all = [...selfMs.values()].reduce((a, b) => a + b, 0);
  const rows = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) =>
      `${v.toFixed(0).padStart(7)} ms ${(100 * v / all).toFixed(1).padStart(5)}%  ${k}`
    );
  return [
    `sampled ${all.toFixed(0)} ms`,
    "self:",
    ...rows(self),
    "total:",
    ...rows(total),
  ];
}

/**
 * Records a CPU profile of the process whose inspector listens on 127.0.0.1:`port` while
 * `work` runs; writes it to `out` and resolves with work's result and the summary lines.
 */
export async function profileDuring<T>(
  port: number,
  out: string,
  work: () => Promise<T>,
): Promise<{ result: T; summary: string[] }> {
  const cdp = new Cdp(await connectInspector(port, 30_000));
  try {
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 500 });
    await cdp.send("Profiler.start");
    const result = await work();
    const { profile } = await cdp.send<{ profile: CpuProfile }>("Profiler.stop");
    await Deno.writeTextFile(out, JSON.stringify(profile));
    return { result, summary: summarize(profile, 20) };
  } finally {
    await cdp.close();
  }
}

/** The value after `--name` in `args`, or `fallback`: the profilers' command lines. */
export function cliOption(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
}

async function main(args: string[]): Promise<void> {
  const opt = (name: string, fallback: string) => cliOption(args, name, fallback);
  const port = Number(opt("--port", "9329"));
  const seconds = Number(opt("--seconds", "20"));
  const out = opt("--out", "bench/out/vkubelet.cpuprofile");
  const ws = await connectInspector(port, Number(opt("--wait-seconds", "120")) * 1000);
  const cdp = new Cdp(ws);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 500 });
  await cdp.send("Profiler.start");
  console.error(`profiling 127.0.0.1:${port} for ${seconds} s`);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const { profile } = await cdp.send<{ profile: CpuProfile }>("Profiler.stop");
  await cdp.close();
  await Deno.writeTextFile(out, JSON.stringify(profile));
  console.log(summarize(profile).join("\n"));
  console.error(`wrote ${out}`);
}

if (import.meta.main) await main(Deno.args);
