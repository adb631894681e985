/**
 * What tracing costs at start-up: wall time and RSS of a fresh Deno process that loads
 * vkubelet's module graph (`main.ts`, not run) as it starts with tracing off, against one that
 * also loads the OpenTelemetry tracer (`app/tracing_otel.ts`, what `--trace-exporter otlp` loads
 * on demand). Alternates the two, `--runs` times each (default 15), and prints the medians.
 *
 *     deno run -A bench/tools/tracing_startup.ts --runs 15
 * @module
 */
import { VKUBELET_PERMISSIONS } from "../../scripts/permissions.ts";

const root = new URL("../../", import.meta.url);
const runs = Number(Deno.args[Deno.args.indexOf("--runs") + 1] || 15);

async function once(withTracer: boolean): Promise<{ ms: number; rssMiB: number }> {
  const imports = [`await import(${JSON.stringify(new URL("main.ts", root).href)});`];
  if (withTracer) {
    imports.push(`await import(${JSON.stringify(new URL("app/tracing_otel.ts", root).href)});`);
  }
  const code = `${imports.join("\n")}\nconsole.log(Deno.memoryUsage().rss);`;
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", ...VKUBELET_PERMISSIONS.filter((f) => !f.startsWith("--allow-ffi")), code],
    cwd: root.pathname,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const ms = performance.now() - started;
  if (!output.success) throw new Error("the import run failed");
  return { ms, rssMiB: Number(new TextDecoder().decode(output.stdout).trim()) / 2 ** 20 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const off: { ms: number; rssMiB: number }[] = [];
const on: { ms: number; rssMiB: number }[] = [];
await once(false); // Warm Deno's module cache.
await once(true);
for (let i = 0; i < runs; i++) {
  off.push(await once(false));
  on.push(await once(true));
}
for (const [name, list] of [["tracing off", off], ["tracer loaded", on]] as const) {
  console.log(
    `${name}: median ${median(list.map((r) => r.ms)).toFixed(0)} ms to load, ` +
      `RSS ${median(list.map((r) => r.rssMiB)).toFixed(1)} MiB (${runs} runs)`,
  );
}
