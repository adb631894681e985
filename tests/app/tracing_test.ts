import assert from "node:assert/strict";
import { startTracing, tracesEndpoint, tracingWanted } from "../../app/tracing.ts";

const base = { traceSampleRate: 100, nodeName: "vk-1", version: "0.0.0" };

Deno.test("tracing is off unless --trace-exporter otlp or an OTLP endpoint variable is set", async () => {
  assert.equal(tracingWanted({ env: {} }), false);
  assert.equal(await startTracing({ ...base, env: {} }), undefined);
  assert.equal(tracingWanted({ traceExporter: "otlp", env: {} }), true);
  assert.equal(
    tracingWanted({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" } }),
    true,
  );
  assert.equal(
    tracingWanted({ env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://x/v1/t" } }),
    true,
  );
  assert.equal(
    tracingWanted({ traceExporter: "otlp", env: { OTEL_SDK_DISABLED: "true" } }),
    false,
    "OpenTelemetry's own off switch wins",
  );
});

Deno.test("the traces URL follows OpenTelemetry's variables", () => {
  assert.equal(tracesEndpoint({}), "http://localhost:4318/v1/traces");
  assert.equal(
    tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318/" }),
    "http://127.0.0.1:4318/v1/traces",
  );
  assert.equal(
    tracesEndpoint({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:9999/traces",
    }),
    "http://127.0.0.1:9999/traces",
  );
});

Deno.test("a traces endpoint that is not a URL is refused with the variable to fix", async () => {
  await assert.rejects(
    startTracing({ ...base, env: { OTEL_EXPORTER_OTLP_ENDPOINT: "127.0.0.1:4318" } }),
    /not a URL; set OTEL_EXPORTER_OTLP_ENDPOINT to one such as http:\/\/127\.0\.0\.1:4318/,
  );
});

interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
}

Deno.test("with tracing off vkubelet loads no OpenTelemetry module: main.ts reaches it only by a dynamic import", async () => {
  const root = new URL("../../main.ts", import.meta.url);
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", root.pathname],
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(output.success, "deno info main.ts failed");
  const info = JSON.parse(new TextDecoder().decode(output.stdout));
  const modules = new Map<string, InfoModule>(
    info.modules.map((m: InfoModule) => [m.specifier, m]),
  );
  const statics = new Set<string>();
  const dynamics = new Set<string>();
  const walk = [root.href];
  while (walk.length > 0) {
    const specifier = walk.pop()!;
    if (statics.has(specifier)) continue;
    statics.add(specifier);
    for (const dep of modules.get(specifier)?.dependencies ?? []) {
      if (!dep.code) continue;
      if (dep.isDynamic) dynamics.add(dep.code.specifier);
      else walk.push(dep.code.specifier);
    }
  }
  const otel = [...statics].filter((s) => s.includes("@opentelemetry"));
  assert.deepEqual(otel, [], "imported at start-up");
  assert.ok(
    [...dynamics].some((s) => s.endsWith("/app/tracing_otel.ts")),
    "the OpenTelemetry tracer is imported on demand",
  );
});
