/**
 * Runs a command with a real Jaeger on loopback to send traces to (`tools/jaeger/jaeger.ts`):
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set to its OTLP/HTTP receiver for the command, and when the
 * command ends the traces Jaeger holds for service `vkubelet` are counted, to show the run was
 * traced. For the bench with tracing on (bench/reports/TRACING.md):
 *
 *     VKBENCH_OUT=/tmp/on VKBENCH_VKUBELET_ARGS="--trace-exporter otlp" \
 *       deno run -A bench/tools/with_jaeger.ts deno task bench --sizes 1000 --subjects vkubelet
 * @module
 */
import { startJaeger } from "../../tools/jaeger/jaeger.ts";

if (Deno.args.length === 0) {
  console.error("usage: deno run -A bench/tools/with_jaeger.ts COMMAND [ARGS...]");
  Deno.exit(2);
}
await using jaeger = await startJaeger();
console.error(`Jaeger: OTLP/HTTP at ${jaeger.otlpEndpoint}, query API at ${jaeger.queryUrl}`);
const status = await new Deno.Command(Deno.args[0], {
  args: Deno.args.slice(1),
  env: { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint },
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn().status;
const traces = await jaeger.traces("vkubelet", { limit: "100000" }).catch(() => []);
const spans = traces.reduce((n, t) => n + t.spans.length, 0);
console.error(`Jaeger holds ${traces.length} traces of vkubelet with ${spans} spans`);
Deno.exitCode = status.code;
