import assert from "node:assert/strict";
import { loadConfig } from "../../../app/config/config.ts";
import type { Config } from "../../../app/config/schema.ts";

const KUBECONFIG = "apiVersion: v1\nkind: Config\n";

async function load(args: string[]) {
  return await loadConfig({
    args: ["--provider=mock", ...args],
    env: {},
    readFile: (path) =>
      path === "/k/config" ? Promise.resolve(KUBECONFIG) : Promise.reject(new Error("absent")),
  });
}

/** Loads `args`, which must be valid, and returns the config and warnings. */
async function accepted(args: string[]) {
  const result = await load(args);
  assert.ok(result.ok, `${args.join(" ")}: expected a valid config, got ${JSON.stringify(result)}`);
  return result;
}

/**
 * virtual-kubelet's `--help` at v1.14.1 (cmd/virtual-kubelet/internal/commands/root/flag.go and
 * main.go; klog's flags from k8s.io/klog/v2 v2.140.0 klog.go, which it requires),
 * one command line each, with what a user copying it must see: the option it sets (works), or a
 * warning (mapped or ignored). Hidden and deprecated flags are included.
 */
const VIRTUAL_KUBELET_FLAGS: [string[], Partial<Config> | RegExp][] = [
  [["--kubeconfig", "/k/config"], { kubeconfig: "/k/config" }],
  [["--nodename", "vk-1"], { nodeName: "vk-1" }],
  [["--os", "Linux"], { os: "linux" }],
  [["--provider-config", "/k/config"], { providerConfig: "/k/config" }],
  [["--metrics-addr", ":10255"], { metricsAddr: ":10255" }],
  [["--disable-taint"], { disableTaint: true }],
  [["--pod-sync-workers", "20"], { podSyncWorkers: 20 }],
  [["--full-resync-period", "2m"], { fullResyncPeriod: 120_000 }],
  [["--startup-timeout", "30s"], { startupTimeout: 30_000 }],
  [["--stream-idle-timeout", "1m"], { streamIdleTimeout: 60_000 }],
  [["--stream-creation-timeout", "10s"], { streamCreationTimeout: 10_000 }],
  [["--log-level", "warn"], { logLevel: "warning" }],
  [["--log-level=panic"], { logLevel: "fatal" }],
  [["--kube-api-qps", "500", "--kube-api-burst", "1000"], { kubeApiQps: 500, kubeApiBurst: 1000 }],
  [["--taint", "example.com/vk"], /^--taint=example\.com\/vk .*taken as --taint-key/],
  [["--namespace", "default"], /^--namespace ignored: pods .* every namespace/],
  [["--namespace=default"], /^--namespace ignored/],
  [["--enable-node-lease"], /^--enable-node-lease ignored: the node Lease is always renewed/],
  [["--enable-node-lease=false"], /^--enable-node-lease ignored/],
  [["--cluster-domain", "cluster.local"], /^--cluster-domain ignored: .*--provider-config/],
  [["--trace-exporter", "jaeger"], /^--trace-exporter=jaeger ignored: .*OTLP\/HTTP only/],
  [["--trace-exporter=zpages"], /^--trace-exporter=zpages ignored/],
  [["--trace-exporter", "otlp"], { traceExporter: "otlp" }],
  [["--trace-service-name", "vk"], /^--trace-service-name ignored: .*OTEL_SERVICE_NAME/],
  [["--trace-tag", "a=b"], /^--trace-tag ignored/],
  [["--trace-sample-rate", "always"], { traceSampleRate: 100 }],
  [["--trace-sample-rate", "never"], { traceSampleRate: 0 }],
  [["--trace-sample-rate", "25"], { traceSampleRate: 25 }],
  [["--klog.v", "4"], /^--klog\.v=4 is taken as --log-level=debug/],
  [["--klog.logtostderr"], /^--klog\.logtostderr ignored: .*klog; use --log-level/],
  [["--klog.alsologtostderr=true"], /^--klog\.alsologtostderr ignored/],
  [["--klog.add_dir_header"], /^--klog\.add_dir_header ignored/],
  [["--klog.skip_headers"], /^--klog\.skip_headers ignored/],
  [["--klog.skip_log_headers"], /^--klog\.skip_log_headers ignored/],
  [["--klog.one_output"], /^--klog\.one_output ignored/],
  [["--klog.log_dir", "/var/log"], /^--klog\.log_dir ignored/],
  [["--klog.log_file", "/var/log/vk.log"], /^--klog\.log_file ignored/],
  [["--klog.log_file_max_size", "1800"], /^--klog\.log_file_max_size ignored/],
  [["--klog.stderrthreshold", "2"], /^--klog\.stderrthreshold ignored/],
  [["--klog.vmodule", "pod*=3"], /^--klog\.vmodule ignored/],
  [["--klog.log_backtrace_at", "file.go:12"], /^--klog\.log_backtrace_at ignored/],
  [["--klog.alsologtostderrthreshold", "INFO"], /^--klog\.alsologtostderrthreshold ignored/],
  [
    ["--klog.legacy_stderr_threshold_behavior"],
    /^--klog\.legacy_stderr_threshold_behavior ignored/,
  ],
];

for (const [args, expected] of VIRTUAL_KUBELET_FLAGS) {
  Deno.test(`virtual-kubelet's ${args[0]} works or warns, never exits 2`, async () => {
    // A flag after it must still count: an ignored flag takes only its own value.
    const { config, warnings } = await accepted([...args, "--nodename=after"]);
    assert.equal(config.nodeName, "after");
    if (expected instanceof RegExp) {
      assert.equal(warnings.length, 1, JSON.stringify(warnings));
      assert.match(warnings[0], expected);
    } else {
      assert.deepEqual(warnings, []);
      for (const [key, value] of Object.entries(expected)) {
        if (key !== "nodeName") assert.deepEqual(config[key as keyof Config], value, key);
      }
    }
  });
}

Deno.test("--taint sets the taint key, as virtual-kubelet's deprecated flag did", async () => {
  const { config } = await accepted(["--taint", "example.com/vk"]);
  assert.equal(config.taintKey, "example.com/vk");
});

Deno.test("--taint-key given too wins over --taint, with a warning", async () => {
  const { config, warnings } = await accepted(["--taint=a.io/x", "--taint-key=b.io/y"]);
  assert.equal(config.taintKey, "b.io/y");
  assert.deepEqual(warnings, ["--taint is ignored: --taint-key is also given and wins"]);
});

Deno.test("the kubelet's -v in every spelling maps to a log level with a warning", async () => {
  for (
    const [args, level] of [
      [["-v=4"], "debug"],
      [["-v", "2"], "info"],
      [["--v=6"], "trace"],
      [["--v", "0"], "info"],
      [["-v5"], "trace"],
    ] as const
  ) {
    const { config, warnings } = await accepted([...args]);
    assert.equal(config.logLevel, level, args.join(" "));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], new RegExp(`^--?v=\\d .*taken as --log-level=${level}$`));
  }
});

Deno.test("-v with a non-number is ignored with a warning, not three errors", async () => {
  const { config, warnings } = await accepted(["-v=loud"]);
  assert.equal(config.logLevel, "info");
  assert.match(warnings[0], /^-v=loud is ignored: expected a whole number/);
});

Deno.test("--log-level beats -v", async () => {
  const { config, warnings } = await accepted(["-v=4", "--log-level=error"]);
  assert.equal(config.logLevel, "error");
  assert.match(warnings[0], /^-v is ignored: --log-level is also given/);
});

Deno.test("the kubelet's --address is taken as --listen-address", async () => {
  const { config, warnings } = await accepted(["--address", "127.0.0.1"]);
  assert.equal(config.listenAddress, "127.0.0.1");
  assert.match(warnings[0], /^--address=127\.0\.0\.1 .*taken as --listen-address=127\.0\.0\.1/);
});

Deno.test("a mapped flag with a bad value is reported under the vkubelet flag", async () => {
  const result = await load(["--address=nowhere"]);
  assert.ok(!result.ok);
  assert.match(result.errors.join("\n"), /--listen-address: "nowhere" is not an IPv4 or IPv6/);
});

Deno.test("truly unknown flags are still errors", async () => {
  const result = await load(["--bogus-flag=1", "-x"]);
  assert.ok(!result.ok);
  assert.match(result.errors.join("\n"), /unknown flag --bogus-flag/);
});

Deno.test("--taint key=value:Effect (the kubelet's form) sets key, value and effect", async () => {
  const { config, warnings } = await accepted(["--taint=example.com/vk=gpu:NoExecute"]);
  assert.equal(config.taintKey, "example.com/vk");
  assert.equal(config.taintValue, "gpu");
  assert.equal(config.taintEffect, "NoExecute");
  assert.match(
    warnings[0],
    /--taint-key=example\.com\/vk --taint-value=gpu --taint-effect=NoExecute/,
  );
  const keyOnly = await accepted(["--taint", "example.com/vk:PreferNoSchedule"]);
  assert.equal(keyOnly.config.taintKey, "example.com/vk");
  assert.equal(keyOnly.config.taintEffect, "PreferNoSchedule");
});

Deno.test("--taint with an effect that does not exist names --taint-effect", async () => {
  const result = await load(["--taint=a.io/x=y:Sometimes"]);
  assert.ok(!result.ok);
  assert.ok(result.errors.some((e) => e.startsWith("--taint-effect")), result.errors.join("\n"));
});
